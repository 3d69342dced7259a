/**
 * The main thread's side of a trainer's update worker (threaded: true; PPO's
 * ./ppo/update-worker.ts, SAC's ./sac/update-worker.ts, POCA's ./poca/update-worker.ts): starts the worker on the backend the
 * trainer gives, hands it one update at a time, and turns a worker that fails or exits into an
 * error naming the behavior, so that a waiting trainer never hangs. InFlightUpdate keeps the
 * trainer's one update in flight and its answer; serveUpdates() is the worker's side of the loop.
 */
import * as fs from 'fs';
import * as path from 'path';
import { Worker, parentPort, workerData } from 'worker_threads';
import type { Logger } from '../common/logger';
import { BackendName, selectBackend } from '../networks/backend';

/** The trainers that can update in a worker, by the folder their worker script is built in. */
export type ThreadedTrainerKind = 'ppo' | 'sac' | 'poca';

/** The update worker failed or ended while the trainer still needed it. */
export class UpdateWorkerError extends Error {
  override name = 'UpdateWorkerError';
}

/** The caller waiting for the worker's answer. */
interface PendingUpdate<Reply> {
  resolve(reply: Reply): void;
  reject(error: Error): void;
}

export class UpdateThread<Request, Reply> {
  private readonly worker: Worker;
  private waiting: PendingUpdate<Reply> | null = null;
  /** Why the worker can no longer update, once it failed or was closed. */
  private failure: UpdateWorkerError | null = null;

  constructor(
    private readonly behaviorName: string,
    private readonly kind: ThreadedTrainerKind,
    /** The backend the worker updates on (backend.ts's updateBackend()). */
    backend: BackendName,
    /** What the worker builds its networks from (its workerData, the backend added). */
    setup: object,
  ) {
    this.worker = new Worker(updateWorkerScript(kind), { workerData: { ...setup, backend } });
    // An idle worker does not keep the process alive; one with an update in flight does.
    this.worker.unref();
    this.worker.on('message', (reply: Reply) => this.settle((w) => w.resolve(reply)));
    this.worker.on('error', (error) => this.fail(`failed: ${error.stack ?? error.message}`));
    this.worker.on('exit', (code) => this.fail(`exited with code ${code}`));
  }

  /** Runs one update in the worker; `transfer` lists the request's memory that moves there. */
  update(request: Request, transfer: ArrayBuffer[]): Promise<Reply> {
    if (this.failure !== null) return Promise.reject(this.failure);
    if (this.waiting !== null) throw new Error(`Behavior ${this.behaviorName}: an update is already running in the worker.`);
    this.worker.ref();
    const reply = new Promise<Reply>((resolve, reject) => (this.waiting = { resolve, reject }));
    this.worker.postMessage(request, transfer);
    return reply;
  }

  /** Ends the worker; an update in flight is dropped (its promise rejects). */
  async close(): Promise<void> {
    this.failure ??= new UpdateWorkerError(`Behavior ${this.behaviorName}: the ${this.label} update worker was closed.`);
    await this.worker.terminate();
  }

  private get label(): string {
    return this.kind.toUpperCase();
  }

  private fail(reason: string): void {
    this.failure ??= new UpdateWorkerError(`Behavior ${this.behaviorName}: the ${this.label} update worker ${reason}`);
    const failure = this.failure;
    this.settle((w) => w.reject(failure));
  }

  private settle(answer: (waiting: PendingUpdate<Reply>) => void): void {
    const waiting = this.waiting;
    if (waiting === null) return;
    this.waiting = null;
    this.worker.unref();
    answer(waiting);
  }
}

/** A trainer's one update in flight in its worker, and the worker's answer until the trainer takes it. */
export class InFlightUpdate<Reply> {
  private running: Promise<void> | null = null;
  private answer: Reply | Error | null = null;

  /** Whether an update was started and its answer not yet taken. */
  get busy(): boolean {
    return this.running !== null;
  }

  start(reply: Promise<Reply>): void {
    this.running = reply.then(
      (answer) => {
        this.answer = answer;
      },
      (error: Error) => {
        this.answer = error;
      },
    );
  }

  /** Resolves once the update in flight, if any, has answered. */
  async settled(): Promise<void> {
    await this.running;
  }

  /** The worker's answer, once (null while none came); a failed or crashed worker's error is thrown. */
  take(): Reply | null {
    const answer = this.answer;
    if (answer === null) return null;
    this.answer = null;
    this.running = null;
    if (answer instanceof Error) throw answer;
    return answer;
  }
}

/** The main thread already said which backend runs and why; a worker says nothing. */
const SILENT: Logger = { debug: () => undefined, info: () => undefined, warning: () => undefined, error: () => undefined };

/**
 * The worker's side: selects the backend the trainer gave, builds the update function from its
 * workerData with `start`, then answers each request with what the update returns (the reply and
 * the memory it transfers back). An error thrown by an update ends the worker: the main thread reports it.
 */
export function serveUpdates<Setup, Request, Reply>(
  start: (setup: Setup) => (request: Request) => { reply: Reply; transfer: ArrayBuffer[] } | Promise<{ reply: Reply; transfer: ArrayBuffer[] }>,
): void {
  const port = parentPort!;
  const setup = workerData as Setup & { backend: BackendName };
  const started = selectBackend(setup.backend, SILENT).then(() => start(setup));
  port.on('message', (request: Request) => {
    started
      .then(async (update) => {
        const { reply, transfer } = await update(request);
        port.postMessage(reply, transfer);
      })
      .catch((error: unknown) => {
        // Rethrown outside the promise, so that it ends the worker with an 'error' event on the main thread.
        setImmediate(() => {
          throw error;
        });
      });
  });
}

/**
 * The worker's script. Built, it sits in the trainer's folder beside this module's. Run from the
 * sources (ts-jest, tsx), this module is a .ts file and the worker is the built copy in dist/,
 * which `npm run build` and jest's global setup write.
 */
function updateWorkerScript(kind: ThreadedTrainerKind): string {
  const beside = path.join(__dirname, kind, 'update-worker.js');
  if (fs.existsSync(beside)) return beside;
  const built = path.resolve(__dirname, '..', '..', 'dist', 'trainers', kind, 'update-worker.js');
  if (fs.existsSync(built)) return built;
  throw new UpdateWorkerError(`threaded: true needs the built ${kind.toUpperCase()} update worker, and ${built} is missing: run npm run build.`);
}

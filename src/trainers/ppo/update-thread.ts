/**
 * The main thread's side of a threaded PPO trainer's update worker (./update-worker.ts): starts
 * the worker on the backend the trainer gives (backend.ts's updateBackend()), hands it one update at a time, and turns a
 * worker that fails or exits into an error naming the behavior, so that a waiting trainer never hangs.
 */
import * as fs from 'fs';
import * as path from 'path';
import { Worker } from 'worker_threads';
import type { BackendName } from '../../networks/backend';
import { UpdateReply, UpdateRequest, UpdateWorkerSetup } from './update-protocol';

/** The update worker failed or ended while the trainer still needed it. */
export class UpdateWorkerError extends Error {
  override name = 'UpdateWorkerError';
}

/** The caller waiting for the worker's answer. */
interface PendingUpdate {
  resolve(reply: UpdateReply): void;
  reject(error: Error): void;
}

export class PpoUpdateThread {
  private readonly worker: Worker;
  private waiting: PendingUpdate | null = null;
  /** Why the worker can no longer update, once it failed or was closed. */
  private failure: UpdateWorkerError | null = null;

  constructor(
    private readonly behaviorName: string,
    backend: BackendName,
    setup: Omit<UpdateWorkerSetup, 'backend'>,
  ) {
    this.worker = new Worker(updateWorkerScript(), { workerData: { ...setup, backend } });
    // An idle worker does not keep the process alive; one with an update in flight does.
    this.worker.unref();
    this.worker.on('message', (reply: UpdateReply) => this.settle((w) => w.resolve(reply)));
    this.worker.on('error', (error) => this.fail(`failed: ${error.stack ?? error.message}`));
    this.worker.on('exit', (code) => this.fail(`exited with code ${code}`));
  }

  /** Runs one update in the worker; `transfer` lists the request's memory that moves there. */
  update(request: UpdateRequest, transfer: ArrayBuffer[]): Promise<UpdateReply> {
    if (this.failure !== null) return Promise.reject(this.failure);
    if (this.waiting !== null) throw new Error(`Behavior ${this.behaviorName}: an update is already running in the worker.`);
    this.worker.ref();
    const reply = new Promise<UpdateReply>((resolve, reject) => (this.waiting = { resolve, reject }));
    this.worker.postMessage(request, transfer);
    return reply;
  }

  /** Ends the worker; an update in flight is dropped (its promise rejects). */
  async close(): Promise<void> {
    this.failure ??= new UpdateWorkerError(`Behavior ${this.behaviorName}: the PPO update worker was closed.`);
    await this.worker.terminate();
  }

  private fail(reason: string): void {
    this.failure ??= new UpdateWorkerError(`Behavior ${this.behaviorName}: the PPO update worker ${reason}`);
    const failure = this.failure;
    this.settle((w) => w.reject(failure));
  }

  private settle(answer: (waiting: PendingUpdate) => void): void {
    const waiting = this.waiting;
    if (waiting === null) return;
    this.waiting = null;
    this.worker.unref();
    answer(waiting);
  }
}

/**
 * The worker's script. Built, it sits beside this module. Run from the sources (ts-jest, tsx),
 * this module is a .ts file and the worker is the built copy in dist/, which `npm run build` and
 * jest's global setup write.
 */
function updateWorkerScript(): string {
  const beside = path.join(__dirname, 'update-worker.js');
  if (fs.existsSync(beside)) return beside;
  const built = path.resolve(__dirname, '..', '..', '..', 'dist', 'trainers', 'ppo', 'update-worker.js');
  if (fs.existsSync(built)) return built;
  throw new UpdateWorkerError(`threaded: true needs the built PPO update worker, and ${built} is missing: run npm run build.`);
}

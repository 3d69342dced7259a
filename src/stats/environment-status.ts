/**
 * run_logs/environments.json: the state of the run's environments while it trains, for anyone
 * watching the results folder (the board). ML-Agents writes no such file; it is ours, rewritten
 * whole when something changes (launch, connection, a restart, the end), never on every step:
 *
 *     { "state": "connecting" | "training" | "ended", "updated": seconds since the epoch,
 *       "environments": [ { "worker": 0, "restarts": 0 } ] }
 */
import * as path from 'path';
import { writeFileWhole } from '../common/whole-files';

export const ENVIRONMENTS_FILE_NAME = 'environments.json';

/** connecting: waiting for the environments' handshakes; training: all connected; ended: closed. */
export type RunState = 'connecting' | 'training' | 'ended';

export interface EnvironmentsStatus {
  state: RunState;
  updated: number;
  environments: Array<{ worker: number; restarts: number }>;
}

export class EnvironmentStatusFile {
  private last = '';

  constructor(
    private readonly runLogsDir: string,
    private readonly clock: () => number = () => Date.now() / 1000,
  ) {}

  /** Writes the state when it differs from the one written last. */
  record(state: RunState, restartsPerWorker: readonly number[]): void {
    const environments = restartsPerWorker.map((restarts, worker) => ({ worker, restarts }));
    const key = JSON.stringify([state, environments]);
    if (key === this.last) return;
    const status: EnvironmentsStatus = { state, updated: this.clock(), environments };
    writeFileWhole(path.join(this.runLogsDir, ENVIRONMENTS_FILE_NAME), JSON.stringify(status, null, 4));
    this.last = key;
  }
}

/** Live processes, read from /proc: what the tests check is left running (or not) after a run. */
import * as fs from 'fs';
import { readProcessStats } from '../../src/communicator/launcher';

/** The pids of live processes whose command line holds `text`. */
export function processesWith(text: string): number[] {
  return (readProcessStats() ?? [])
    .filter((p) => p.state !== 'Z' && p.state !== 'X')
    .filter((p) => {
      try {
        return fs.readFileSync(`/proc/${p.pid}/cmdline`, 'utf8').split('\0').join(' ').includes(text);
      } catch {
        return false;
      }
    })
    .map((p) => p.pid);
}

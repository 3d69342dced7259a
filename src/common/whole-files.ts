/**
 * Files written whole or not at all. A write goes to `<file>.partial` and is renamed over the file
 * once complete, so that a crash or a full disk leaves the previous file, never half of a new one;
 * a write that fails removes its partial file and says which file, in which folder, and why.
 */
import * as fs from 'fs';
import * as path from 'path';

/** A file could not be written; the previous one, if any, is left as it was. */
export class FileWriteError extends Error {
  override name = 'FileWriteError';

  constructor(
    readonly file: string,
    cause: unknown,
  ) {
    super(describeWriteFailure(file, cause), { cause });
  }
}

/** Writes `data` to `file` whole or not at all. */
export function writeFileWhole(file: string, data: string | Uint8Array): void {
  const partial = `${file}.partial`;
  try {
    fs.writeFileSync(partial, data);
    fs.renameSync(partial, file);
  } catch (error) {
    fs.rmSync(partial, { force: true });
    throw new FileWriteError(file, error);
  }
}

/** Copies `from` to `to` whole or not at all. */
export function copyFileWhole(from: string, to: string): void {
  writeFileWhole(to, fs.readFileSync(from));
}

/** Why writing `file` failed, in words that name the file, its folder and what to do. */
function describeWriteFailure(file: string, cause: unknown): string {
  const code = (cause as NodeJS.ErrnoException).code;
  const folder = path.dirname(path.resolve(file));
  const where = `${path.basename(file)} in ${folder}`;
  switch (code) {
    case 'ENOSPC':
    case 'EDQUOT':
      return (
        `Could not write ${where}: no space left on the device (${code}). Free space on the disk that holds ` +
        `${folder}, or write the results to another disk (--results-dir).`
      );
    case 'EACCES':
    case 'EPERM':
    case 'EROFS':
      return `Could not write ${where}: permission denied (${code}). Make ${folder} writable, or write the results elsewhere (--results-dir).`;
    default:
      return `Could not write ${where}: ${(cause as Error).message}`;
  }
}

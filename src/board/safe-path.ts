/**
 * The one way a request names a file: a path inside the results folder, "/"-separated and
 * percent-encoded as it came on the wire. Anything that could reach beyond the folder is refused
 * before the filesystem is asked, and what the filesystem answers is checked again, so that a
 * symbolic link cannot lead out either.
 */
import * as fs from 'fs';
import * as path from 'path';

export class RefusedPath extends Error {
  override name = 'RefusedPath';

  constructor(
    readonly status: 400 | 403 | 404,
    message: string,
  ) {
    super(message);
  }
}

/**
 * The real path of the regular file that `encoded` (the request's path after its prefix, not yet
 * decoded) names inside `root`, itself a real path. Refused: undecodable text, NUL, empty, "." or
 * ".." segments (plain or encoded), encoded separators, backslashes, absolute and drive paths,
 * and any file whose real path is outside `root`.
 */
export function fileInside(root: string, encoded: string): string {
  const segments = encoded.split('/').map((segment) => {
    try {
      return decodeURIComponent(segment);
    } catch {
      throw new RefusedPath(400, 'The path is not valid percent-encoded text.');
    }
  });
  for (const segment of segments) {
    if (segment === '' || segment === '.' || segment === '..') {
      throw new RefusedPath(403, 'Only paths inside the results folder are served: no empty, "." or ".." parts, nor absolute paths.');
    }
    if (/[/\\\0]/.test(segment) || /^[A-Za-z]:/.test(segment)) {
      throw new RefusedPath(403, 'Only paths inside the results folder are served: no separators, NUL or drive letters inside a part.');
    }
  }
  let real: string;
  try {
    real = fs.realpathSync(path.join(root, ...segments));
  } catch {
    throw new RefusedPath(404, 'No such file in the results folder.');
  }
  if (!real.startsWith(root + path.sep)) {
    throw new RefusedPath(403, 'This path leads outside the results folder (a symbolic link): it is not served.');
  }
  if (!fs.statSync(real).isFile()) throw new RefusedPath(404, 'Only files are served, not folders.');
  return real;
}

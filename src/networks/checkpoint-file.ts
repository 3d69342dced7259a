/**
 * The file format of our checkpoints: named float arrays and a JSON description in one file.
 *
 *   bytes 0-7    "MLTSCKPT" (ASCII)
 *   bytes 8-11   header length H, uint32 little-endian
 *   bytes 12-    header: H bytes of UTF-8 JSON
 *                  { "format": 2, "meta": {...}, "arrays": [{ "name", "dtype", "length", "offset" }] }
 *                  dtype is "float32" or "float64"; offset counts bytes from the start of the data
 *   then         zero padding to a multiple of 8 bytes, then the data: each array's values,
 *                little-endian, at its offset (each offset a multiple of 8)
 *   last 4 bytes CRC32C (Castagnoli) of every byte before them, uint32 little-endian
 *
 * Format 1, written before checksums, is the same without the last 4 bytes; it is still read
 * (without a check). A reader needs nothing but this description (Python: json + numpy.frombuffer).
 */
import { crc32c } from '../common/crc32c';
import * as fs from 'fs';

const MAGIC = 'MLTSCKPT';
/** The format written: format 1's layout and a checksum after it. */
const FORMAT = 2;
/** The format of checkpoints written before they carried a checksum. */
const FORMAT_WITHOUT_CHECKSUM = 1;
const CHECKSUM_BYTES = 4;

export type CheckpointArray = Float32Array | Float64Array;

export interface CheckpointContents {
  readonly meta: Record<string, unknown>;
  readonly arrays: ReadonlyMap<string, CheckpointArray>;
}

export class CheckpointFormatError extends Error {
  override name = 'CheckpointFormatError';
}

/** The file was damaged after it was written: cut short, or its bytes no longer match its checksum. */
export class CheckpointDamagedError extends CheckpointFormatError {
  override name = 'CheckpointDamagedError';
}

/** The array of this name, refused (naming it) when absent or not of `length` values. */
export function requireCheckpointArray(arrays: ReadonlyMap<string, CheckpointArray>, name: string, length: number): CheckpointArray {
  const values = arrays.get(name);
  if (values === undefined || values.length !== length) {
    throw new Error(`The checkpoint's ${name} has ${values?.length ?? 'no'} values where ${length} were expected.`);
  }
  return values;
}

interface ArrayEntry {
  name: string;
  dtype: 'float32' | 'float64';
  length: number;
  offset: number;
}

export function encodeCheckpoint(meta: Record<string, unknown>, arrays: ReadonlyMap<string, CheckpointArray>): Uint8Array {
  const entries: ArrayEntry[] = [];
  const contents: CheckpointArray[] = [];
  let dataSize = 0;
  for (const [name, values] of arrays) {
    entries.push({ name, dtype: values instanceof Float64Array ? 'float64' : 'float32', length: values.length, offset: dataSize });
    contents.push(values);
    dataSize += align8(values.byteLength);
  }
  const header = Buffer.from(JSON.stringify({ format: FORMAT, meta, arrays: entries }), 'utf8');
  const dataStart = align8(12 + header.length);
  const checksumAt = dataStart + dataSize;
  const bytes = new Uint8Array(checksumAt + CHECKSUM_BYTES);
  const view = new DataView(bytes.buffer);
  bytes.set(Buffer.from(MAGIC, 'ascii'), 0);
  view.setUint32(8, header.length, true);
  bytes.set(header, 12);
  entries.forEach((entry, k) => {
    const values = contents[k];
    const start = dataStart + entry.offset;
    for (let i = 0; i < values.length; i++) {
      if (entry.dtype === 'float64') view.setFloat64(start + 8 * i, values[i], true);
      else view.setFloat32(start + 4 * i, values[i], true);
    }
  });
  view.setUint32(checksumAt, crc32c(bytes.subarray(0, checksumAt)), true);
  return bytes;
}

/**
 * Reads a checkpoint of format 2 (its checksum checked first) or of format 1 (no checksum).
 * Throws CheckpointDamagedError for a file changed or cut short after it was written, and
 * CheckpointFormatError for one that is not a checkpoint or of a format this version does not read.
 */
export function decodeCheckpoint(bytes: Uint8Array): CheckpointContents {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes.length < 12 || Buffer.from(bytes.subarray(0, 8)).toString('ascii') !== MAGIC) {
    throw new CheckpointFormatError(`This is not one of our checkpoints (it does not start with ${MAGIC}).`);
  }
  const checksumAt = bytes.length - CHECKSUM_BYTES;
  const checksumMatches = checksumAt >= 12 && crc32c(bytes.subarray(0, checksumAt)) === view.getUint32(checksumAt, true);
  const headerLength = view.getUint32(8, true);
  if (12 + headerLength > bytes.length) {
    throw new CheckpointDamagedError('The file is damaged or cut short: its header runs past the end of the file.');
  }
  const header = readHeader(bytes.subarray(12, 12 + headerLength), checksumMatches);
  if (header.format === FORMAT && !checksumMatches) {
    throw new CheckpointDamagedError(
      'The file is damaged: its bytes no longer match the checksum written with them (the file was changed or cut short after it was saved).',
    );
  }
  if (header.format !== FORMAT && header.format !== FORMAT_WITHOUT_CHECKSUM) {
    throw new CheckpointFormatError(
      `The checkpoint has format ${String(header.format)}; this version reads formats ${FORMAT_WITHOUT_CHECKSUM} and ${FORMAT}.`,
    );
  }
  const dataStart = align8(12 + headerLength);
  const dataEnd = header.format === FORMAT ? checksumAt : bytes.length;
  const arrays = new Map<string, CheckpointArray>();
  for (const entry of header.arrays) {
    const width = entry.dtype === 'float64' ? 8 : 4;
    const start = dataStart + entry.offset;
    if (start + entry.length * width > dataEnd) {
      throw new CheckpointDamagedError(`The file is damaged or cut short: array ${entry.name} runs past the end of the file.`);
    }
    const values = entry.dtype === 'float64' ? new Float64Array(entry.length) : new Float32Array(entry.length);
    for (let i = 0; i < entry.length; i++) {
      values[i] = width === 8 ? view.getFloat64(start + 8 * i, true) : view.getFloat32(start + 4 * i, true);
    }
    arrays.set(entry.name, values);
  }
  return { meta: header.meta, arrays };
}

interface Header {
  format: unknown;
  meta: Record<string, unknown>;
  arrays: ArrayEntry[];
}

/** The JSON header; one that does not parse is damage (or, with a matching checksum, not ours). */
function readHeader(bytes: Uint8Array, checksumMatches: boolean): Header {
  try {
    return JSON.parse(Buffer.from(bytes).toString('utf8')) as Header;
  } catch (error) {
    const detail = `its header is not readable JSON (${(error as Error).message})`;
    if (checksumMatches) throw new CheckpointFormatError(`This is not one of our checkpoints: ${detail}.`);
    throw new CheckpointDamagedError(`The file is damaged: ${detail}.`);
  }
}

/** Reads and checks a checkpoint file (decodeCheckpoint's errors; the caller names the file). */
export function readCheckpointFile(path: string): CheckpointContents {
  return decodeCheckpoint(fs.readFileSync(path));
}

function align8(n: number): number {
  return Math.ceil(n / 8) * 8;
}

/**
 * The file format of our checkpoints: named float arrays and a JSON description in one file.
 *
 *   bytes 0-7    "MLTSCKPT" (ASCII)
 *   bytes 8-11   header length H, uint32 little-endian
 *   bytes 12-    header: H bytes of UTF-8 JSON
 *                  { "format": 1, "meta": {...}, "arrays": [{ "name", "dtype", "length", "offset" }] }
 *                  dtype is "float32" or "float64"; offset counts bytes from the start of the data
 *   then         zero padding to a multiple of 8 bytes, then the data: each array's values,
 *                little-endian, at its offset (each offset a multiple of 8)
 *
 * A reader needs nothing but this description (Python: json + numpy.frombuffer).
 */
import * as fs from 'fs';

const MAGIC = 'MLTSCKPT';
const FORMAT = 1;

export type CheckpointArray = Float32Array | Float64Array;

export interface CheckpointContents {
  readonly meta: Record<string, unknown>;
  readonly arrays: ReadonlyMap<string, CheckpointArray>;
}

export class CheckpointFormatError extends Error {
  override name = 'CheckpointFormatError';
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
  const bytes = new Uint8Array(dataStart + dataSize);
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
  return bytes;
}

export function decodeCheckpoint(bytes: Uint8Array): CheckpointContents {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes.length < 12 || Buffer.from(bytes.subarray(0, 8)).toString('ascii') !== MAGIC) {
    throw new CheckpointFormatError(`This is not one of our checkpoints (it does not start with ${MAGIC}).`);
  }
  const headerLength = view.getUint32(8, true);
  if (12 + headerLength > bytes.length) {
    throw new CheckpointFormatError('The checkpoint is cut short: its header runs past the end of the file.');
  }
  const header = JSON.parse(Buffer.from(bytes.subarray(12, 12 + headerLength)).toString('utf8')) as {
    format: number;
    meta: Record<string, unknown>;
    arrays: ArrayEntry[];
  };
  if (header.format !== FORMAT) {
    throw new CheckpointFormatError(`The checkpoint has format ${header.format}; this version reads format ${FORMAT}.`);
  }
  const dataStart = align8(12 + headerLength);
  const arrays = new Map<string, CheckpointArray>();
  for (const entry of header.arrays) {
    const width = entry.dtype === 'float64' ? 8 : 4;
    const start = dataStart + entry.offset;
    if (start + entry.length * width > bytes.length) {
      throw new CheckpointFormatError(`The checkpoint is cut short: array ${entry.name} runs past the end of the file.`);
    }
    const values = entry.dtype === 'float64' ? new Float64Array(entry.length) : new Float32Array(entry.length);
    for (let i = 0; i < entry.length; i++) {
      values[i] = width === 8 ? view.getFloat64(start + 8 * i, true) : view.getFloat32(start + 4 * i, true);
    }
    arrays.set(entry.name, values);
  }
  return { meta: header.meta, arrays };
}

/** Writes the file whole or not at all: a crash mid-write leaves the previous file in place. */
export function writeCheckpointFile(path: string, bytes: Uint8Array): void {
  const partial = `${path}.partial`;
  fs.writeFileSync(partial, bytes);
  fs.renameSync(partial, path);
}

export function readCheckpointFile(path: string): CheckpointContents {
  return decodeCheckpoint(fs.readFileSync(path));
}

function align8(n: number): number {
  return Math.ceil(n / 8) * 8;
}

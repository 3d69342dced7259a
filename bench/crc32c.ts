/**
 * npm run bench:crc32c: our CRC-32C against the packages one could use instead, on what the
 * project sums: a million TensorBoard-sized inputs (8-byte record lengths and 45-byte events,
 * alternating, views into one file's bytes) and one 64 MiB buffer (a large checkpoint).
 * @aws-crypto/crc32c is a devDependency; @node-rs/crc32 and hash-wasm join the table when
 * installed beside the project (`npm install --no-save @node-rs/crc32 hash-wasm`).
 */
import { crc32c as awsCrc32c } from '@aws-crypto/crc32c';
import { crc32c } from '../src/common/crc32c';
import { printTable } from './table';

type Sum = (bytes: Uint8Array) => number;

const BULK_BYTES = 64 * 2 ** 20;
const SMALL_INPUTS = 1_000_000;

/** A package if installed, else null: the benchmark compares with what is there. */
function optional<T>(name: string): T | null {
  try {
    return require(name) as T;
  } catch {
    return null;
  }
}

/** Byte at a time from one 256-entry table: the loop crc32c used before slicing-by-8. */
const BYTE_TABLE = Int32Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let bit = 0; bit < 8; bit++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
  return c;
});
function byteAtATime(bytes: Uint8Array): number {
  let crc = -1;
  for (let i = 0; i < bytes.length; i++) crc = BYTE_TABLE[(crc ^ bytes[i]) & 0xff] ^ (crc >>> 8);
  return ~crc >>> 0;
}

async function candidates(): Promise<Array<[string, Sum]>> {
  const list: Array<[string, Sum]> = [
    ['ours (slicing-by-8)', (bytes) => crc32c(bytes)],
    ['byte at a time (ours before)', byteAtATime],
    ['@aws-crypto/crc32c', awsCrc32c],
  ];
  const nodeRs = optional<{ crc32c(input: Uint8Array): number }>('@node-rs/crc32');
  if (nodeRs !== null) list.push(['@node-rs/crc32 (native)', (bytes) => nodeRs.crc32c(bytes)]);
  type Hasher = { init(): void; update(data: Uint8Array): void; digest(format: 'binary'): Uint8Array };
  const hashWasm = optional<{ createCRC32(polynomial: number): Promise<Hasher> }>('hash-wasm');
  if (hashWasm !== null) {
    const hasher = await hashWasm.createCRC32(0x82f63b78);
    list.push([
      'hash-wasm (WebAssembly)',
      (bytes) => {
        hasher.init();
        hasher.update(bytes);
        const d = hasher.digest('binary');
        return ((d[0] << 24) | (d[1] << 16) | (d[2] << 8) | d[3]) >>> 0;
      },
    ]);
  }
  return list;
}

function milliseconds(run: () => void): number {
  const start = process.hrtime.bigint();
  run();
  return Number(process.hrtime.bigint() - start) / 1e6;
}

async function main(): Promise<void> {
  // A Buffer, as read from a file: its views are Buffers, which native addons take as they are.
  const bulk = Buffer.from(Uint8Array.from({ length: BULK_BYTES }, (_, i) => (i * 7919) >>> 5));
  const small: Buffer[] = [];
  for (let i = 0, offset = 0; i < SMALL_INPUTS; i++, offset = (offset + 61) % (BULK_BYTES - 64)) small.push(bulk.subarray(offset, offset + (i % 2 === 0 ? 8 : 45)));
  const rows: string[][] = [];
  for (const [name, sum] of await candidates()) {
    if (sum(bulk.subarray(3, 70003)) !== crc32c(bulk, 3, 70003)) throw new Error(`${name} disagrees with ours`);
    // Best of three: the machine is shared.
    let bulkMs = Infinity;
    let smallMs = Infinity;
    for (let repeat = 0; repeat < 3; repeat++) {
      bulkMs = Math.min(bulkMs, milliseconds(() => sum(bulk)));
      smallMs = Math.min(smallMs, milliseconds(() => small.forEach(sum)));
    }
    rows.push([name, `${smallMs.toFixed(0)} ms`, `${bulkMs.toFixed(0)} ms (${(BULK_BYTES / bulkMs / 1e3).toFixed(0)} MB/s)`]);
  }
  printTable('CRC-32C', ['implementation', `${SMALL_INPUTS / 1e6}M inputs of 8 and 45 bytes`, '64 MiB at once'], rows);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});

/**
 * TFRecord framing, the container of TensorBoard event files. Each record is, little-endian:
 *
 *     uint64 length | uint32 masked CRC32C of those 8 bytes | data | uint32 masked CRC32C of data
 *
 * TensorFlow masks its CRCs (rotate right by 15, add a constant) because a CRC over data that
 * itself holds CRCs is weak; readers must apply the same mask.
 */
import { crc32c } from '../common/crc32c';

const LENGTH_BYTES = 8;
const CRC_BYTES = 4;
const HEADER_BYTES = LENGTH_BYTES + CRC_BYTES;
const MASK_DELTA = 0xa282ead8;

/** TensorFlow's masked CRC32C of `bytes`, as an unsigned 32-bit number. */
export function maskedCrc32c(bytes: Uint8Array): number {
  const crc = crc32c(bytes);
  return (((crc >>> 15) | (crc << 17)) + MASK_DELTA) >>> 0;
}

/** One record around `data`, ready to append to a file. */
export function encodeRecord(data: Uint8Array): Uint8Array {
  const record = new Uint8Array(HEADER_BYTES + data.length + CRC_BYTES);
  const view = new DataView(record.buffer);
  view.setBigUint64(0, BigInt(data.length), true);
  view.setUint32(LENGTH_BYTES, maskedCrc32c(record.subarray(0, LENGTH_BYTES)), true);
  record.set(data, HEADER_BYTES);
  view.setUint32(HEADER_BYTES + data.length, maskedCrc32c(data), true);
  return record;
}

/** Why a record could not be read. */
export type RecordProblem = 'cut header' | 'length CRC' | 'cut data' | 'data CRC';

const PROBLEM_WORDS: Record<RecordProblem, string> = {
  'cut header': 'the file ends inside the length header',
  'length CRC': 'the CRC of the length does not match (corrupt file)',
  'cut data': 'the file ends inside the data',
  'data CRC': 'the CRC of the data does not match (corrupt file)',
};

type RecordAt = { data: Uint8Array; next: number } | { problem: RecordProblem; next?: number };

/** The record starting at `offset`, both CRCs checked; a problem carries `next` when the length could be trusted. */
function recordAt(bytes: Uint8Array, view: DataView, offset: number): RecordAt {
  if (bytes.length - offset < HEADER_BYTES) return { problem: 'cut header' };
  if (view.getUint32(offset + LENGTH_BYTES, true) !== maskedCrc32c(bytes.subarray(offset, offset + LENGTH_BYTES))) {
    return { problem: 'length CRC' };
  }
  const length = view.getBigUint64(offset, true);
  const dataStart = offset + HEADER_BYTES;
  if (length > BigInt(bytes.length - dataStart - CRC_BYTES)) return { problem: 'cut data' };
  const dataEnd = dataStart + Number(length);
  const data = bytes.subarray(dataStart, dataEnd);
  const next = dataEnd + CRC_BYTES;
  if (view.getUint32(dataEnd, true) !== maskedCrc32c(data)) return { problem: 'data CRC', next };
  return { data, next };
}

function viewOf(bytes: Uint8Array): DataView {
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/**
 * The data of every record in `bytes`, each CRC checked. Throws on a CRC mismatch or a cut
 * record, naming `source` and the byte offset where the bad record starts.
 */
export function decodeRecords(bytes: Uint8Array, source: string): Uint8Array[] {
  const view = viewOf(bytes);
  const records: Uint8Array[] = [];
  for (let offset = 0; offset < bytes.length; ) {
    const record = recordAt(bytes, view, offset);
    if ('problem' in record) {
      throw new Error(`${source}: ${PROBLEM_WORDS[record.problem]} in the record at byte offset ${offset}`);
    }
    records.push(record.data);
    offset = record.next;
  }
  return records;
}

/** What a tolerant read of records found: the good ones, the skipped ones, and where to go on. */
export interface RecordScan {
  records: Uint8Array[];
  /** Each damaged stretch passed over: where it starts, how long, and why, in words. */
  skipped: Array<{ offset: number; bytes: number; reason: string }>;
  /** Where the next read starts: past the last whole record, or at a cut record (a write may still complete it). */
  end: number;
  /** Set when the bytes end inside a record that starts at `end`. */
  cut: boolean;
}

/**
 * Reads the records of `bytes` from `start` without giving up on damage: a record whose data
 * fails its CRC is skipped; after a length that fails its CRC, reading resumes at the next
 * offset where a whole record checks out (or skips the rest). A cut record at the end is left
 * for a later read, as a file being appended to ends in one.
 */
export function scanRecords(bytes: Uint8Array, start = 0): RecordScan {
  const view = viewOf(bytes);
  const scan: RecordScan = { records: [], skipped: [], end: start, cut: false };
  let offset = start;
  while (offset < bytes.length) {
    const record = recordAt(bytes, view, offset);
    if (!('problem' in record)) {
      scan.records.push(record.data);
      offset = record.next;
      continue;
    }
    if (record.problem === 'cut header' || record.problem === 'cut data') {
      scan.cut = true;
      break;
    }
    const next = record.next ?? nextWholeRecord(bytes, view, offset + 1);
    scan.skipped.push({ offset, bytes: next - offset, reason: PROBLEM_WORDS[record.problem] });
    offset = next;
  }
  scan.end = offset;
  return scan;
}

/** The first offset from `from` where a whole record checks out, or the end of `bytes`. */
function nextWholeRecord(bytes: Uint8Array, view: DataView, from: number): number {
  for (let offset = from; offset + HEADER_BYTES + CRC_BYTES <= bytes.length; offset++) {
    if ('data' in recordAt(bytes, view, offset)) return offset;
  }
  return bytes.length;
}

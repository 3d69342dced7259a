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

/** TensorFlow's masked CRC32C of `bytes[start..end)` (all of it by default), as an unsigned 32-bit number. */
export function maskedCrc32c(bytes: Uint8Array, start = 0, end = bytes.length): number {
  const crc = crc32c(bytes, start, end);
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

/**
 * Checks the record starting at `offset`: its data length when it is whole and both CRCs match,
 * else what is wrong. Numbers only, nothing allocated: a results folder holds millions of records.
 */
function checkRecord(bytes: Uint8Array, view: DataView, offset: number): number | RecordProblem {
  if (bytes.length - offset < HEADER_BYTES) return 'cut header';
  if (view.getUint32(offset + LENGTH_BYTES, true) !== maskedCrc32c(bytes, offset, offset + LENGTH_BYTES)) return 'length CRC';
  const length = dataLength(view, offset);
  const dataStart = offset + HEADER_BYTES;
  if (length > bytes.length - dataStart - CRC_BYTES) return 'cut data';
  const dataEnd = dataStart + length;
  if (view.getUint32(dataEnd, true) !== maskedCrc32c(bytes, dataStart, dataEnd)) return 'data CRC';
  return length;
}

/** The uint64 length of the record at `offset` (exact below 2^53, and larger than any file above). */
function dataLength(view: DataView, offset: number): number {
  return view.getUint32(offset, true) + view.getUint32(offset + 4, true) * 2 ** 32;
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
    const length = checkRecord(bytes, view, offset);
    if (typeof length !== 'number') throw new Error(`${source}: ${PROBLEM_WORDS[length]} in the record at byte offset ${offset}`);
    records.push(bytes.subarray(offset + HEADER_BYTES, offset + HEADER_BYTES + length));
    offset += HEADER_BYTES + length + CRC_BYTES;
  }
  return records;
}

/** Where a tolerant read of records stopped. */
export interface RecordsEnd {
  /** Where the next read starts: past the last whole record, or at a cut record (a write may still complete it). */
  end: number;
  /** Set when the bytes end inside a record that starts at `end`. */
  cut: boolean;
}

/** A damaged stretch passed over: where it starts, how long, and why, in words. */
export interface SkippedBytes {
  offset: number;
  bytes: number;
  reason: string;
}

/** What a tolerant read of records found: the good ones, the skipped ones, and where to go on. */
export interface RecordScan extends RecordsEnd {
  records: Uint8Array[];
  skipped: SkippedBytes[];
}

/**
 * Reads the records of `bytes` from `start` without giving up on damage, passing the data of
 * each whole record to `onRecord` as a range of `bytes`: a record whose data fails its CRC is
 * skipped; after a length that fails its CRC, reading resumes at the next offset where a whole
 * record checks out (or skips the rest). A cut record at the end is left for a later read, as a
 * file being appended to ends in one.
 */
export function visitRecords(
  bytes: Uint8Array,
  start: number,
  onRecord: (dataStart: number, dataEnd: number) => void,
  onSkipped: (skipped: SkippedBytes) => void,
): RecordsEnd {
  const view = viewOf(bytes);
  let offset = start;
  while (offset < bytes.length) {
    const length = checkRecord(bytes, view, offset);
    if (typeof length === 'number') {
      onRecord(offset + HEADER_BYTES, offset + HEADER_BYTES + length);
      offset += HEADER_BYTES + length + CRC_BYTES;
    } else if (length === 'cut header' || length === 'cut data') {
      return { end: offset, cut: true };
    } else {
      // A bad data CRC under a good length still says where the next record starts.
      const next = length === 'data CRC' ? offset + HEADER_BYTES + dataLength(view, offset) + CRC_BYTES : nextWholeRecord(bytes, view, offset + 1);
      onSkipped({ offset, bytes: next - offset, reason: PROBLEM_WORDS[length] });
      offset = next;
    }
  }
  return { end: offset, cut: false };
}

/** visitRecords, the records' data collected as views of `bytes`. */
export function scanRecords(bytes: Uint8Array, start = 0): RecordScan {
  const records: Uint8Array[] = [];
  const skipped: SkippedBytes[] = [];
  const end = visitRecords(bytes, start, (dataStart, dataEnd) => records.push(bytes.subarray(dataStart, dataEnd)), (stretch) => skipped.push(stretch));
  return { records, skipped, ...end };
}

/** The first offset from `from` where a whole record checks out, or the end of `bytes`. */
function nextWholeRecord(bytes: Uint8Array, view: DataView, from: number): number {
  for (let offset = from; offset + HEADER_BYTES + CRC_BYTES <= bytes.length; offset++) {
    if (typeof checkRecord(bytes, view, offset) === 'number') return offset;
  }
  return bytes.length;
}

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

/**
 * The data of every record in `bytes`, each CRC checked. Throws on a CRC mismatch or a cut
 * record, naming `source` and the byte offset where the bad record starts.
 */
export function decodeRecords(bytes: Uint8Array, source: string): Uint8Array[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const records: Uint8Array[] = [];
  let offset = 0;
  while (offset < bytes.length) {
    const fail = (what: string) => {
      throw new Error(`${source}: ${what} in the record at byte offset ${offset}`);
    };
    if (bytes.length - offset < HEADER_BYTES) fail('the file ends inside the length header');
    const lengthBytes = bytes.subarray(offset, offset + LENGTH_BYTES);
    if (view.getUint32(offset + LENGTH_BYTES, true) !== maskedCrc32c(lengthBytes)) {
      fail('the CRC of the length does not match (corrupt file)');
    }
    const length = view.getBigUint64(offset, true);
    const dataStart = offset + HEADER_BYTES;
    if (length > BigInt(bytes.length - dataStart - CRC_BYTES)) fail('the file ends inside the data');
    const dataEnd = dataStart + Number(length);
    const data = bytes.subarray(dataStart, dataEnd);
    if (view.getUint32(dataEnd, true) !== maskedCrc32c(data)) {
      fail('the CRC of the data does not match (corrupt file)');
    }
    records.push(data);
    offset = dataEnd + CRC_BYTES;
  }
  return records;
}

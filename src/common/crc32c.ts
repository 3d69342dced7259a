/**
 * CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of our checkpoint files and
 * of TensorBoard's records, summed eight bytes a step ("slicing-by-8": eight tables, each the CRC
 * of a byte followed by 0 to 7 zero bytes).
 *
 * Hand-written because the board sums two CRCs for every TensorBoard record, most of them 8 and
 * about 45 bytes long, where a call into native or WebAssembly code costs more than the sum itself:
 * on a million such inputs this takes about 90 ms, byte by byte 250 ms, @node-rs/crc32 (SSE 4.2)
 * 350 ms, hash-wasm 650 ms (bench/README.md, bench:crc32c). It allocates nothing, however large
 * the input, so that the save at the end of a run short of heap needs none (the @aws-crypto/crc32c
 * package allocates about 9 bytes of heap per byte it sums).
 */
const POLYNOMIAL = 0x82f63b78;

/** TABLES[k * 256 + b]: the CRC register after byte b then k zero bytes. */
const TABLES = (() => {
  const tables = new Int32Array(8 * 256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let bit = 0; bit < 8; bit++) c = c & 1 ? (c >>> 1) ^ POLYNOMIAL : c >>> 1;
    tables[n] = c;
  }
  for (let k = 1; k < 8; k++) {
    for (let n = 0; n < 256; n++) {
      const previous = tables[(k - 1) * 256 + n];
      tables[k * 256 + n] = (previous >>> 8) ^ tables[previous & 0xff];
    }
  }
  return tables;
})();

/** The CRC-32C of `bytes[start..end)` (all of `bytes` by default), as an unsigned 32-bit integer. */
export function crc32c(bytes: Uint8Array, start = 0, end = bytes.length): number {
  const t = TABLES;
  let crc = -1;
  let i = start;
  for (; i + 8 <= end; i += 8) {
    const low = crc ^ (bytes[i] | (bytes[i + 1] << 8) | (bytes[i + 2] << 16) | (bytes[i + 3] << 24));
    crc =
      t[7 * 256 + (low & 0xff)] ^
      t[6 * 256 + ((low >>> 8) & 0xff)] ^
      t[5 * 256 + ((low >>> 16) & 0xff)] ^
      t[4 * 256 + (low >>> 24)] ^
      t[3 * 256 + bytes[i + 4]] ^
      t[2 * 256 + bytes[i + 5]] ^
      t[256 + bytes[i + 6]] ^
      t[bytes[i + 7]];
  }
  for (; i < end; i++) crc = t[(crc ^ bytes[i]) & 0xff] ^ (crc >>> 8);
  return ~crc >>> 0;
}

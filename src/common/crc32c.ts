/**
 * CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of our checkpoint files and
 * of TensorBoard's records. A table and a plain loop: it allocates nothing, however large the
 * input, so that the save at the end of a run short of heap needs none (the @aws-crypto/crc32c
 * package allocates about 9 bytes of heap per byte it sums).
 */
const TABLE = (() => {
  const table = new Int32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let bit = 0; bit < 8; bit++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
    table[n] = c;
  }
  return table;
})();

/** The CRC-32C of `bytes`, as an unsigned 32-bit integer. */
export function crc32c(bytes: Uint8Array): number {
  let crc = -1;
  for (let i = 0; i < bytes.length; i++) crc = TABLE[(crc ^ bytes[i]) & 0xff] ^ (crc >>> 8);
  return ~crc >>> 0;
}

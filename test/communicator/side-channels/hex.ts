/** Bytes from a readable hex listing such as "02 00 00 00  00 00 a0 41". */
export function hex(listing: string): Uint8Array {
  const digits = listing.replace(/\s+/g, '');
  if (!/^([0-9a-f]{2})*$/i.test(digits)) throw new Error(`bad hex listing: ${listing}`);
  const out = new Uint8Array(digits.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(digits.slice(i * 2, i * 2 + 2), 16);
  return out;
}

/** A readable listing of bytes, for clearer failure messages. */
export function toHex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join(' ');
}

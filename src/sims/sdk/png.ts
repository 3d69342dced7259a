/**
 * Camera images as Unity sends them: PNG bytes (Unity's default compression for visual
 * observations), from channel-first floats in [0, 1], 8 bits a sample.
 *
 * Our own small encoder: one IHDR (8-bit grayscale or RGB, no interlace), one IDAT holding the
 * rows (each behind filter byte 0, "none") deflated by node's zlib, one IEND; each chunk with its
 * CRC-32. Rendered scenes are mostly flat color, which deflate packs well without row filters.
 * It costs about a fifth of pngjs's writer, which packs its RGBA input in JavaScript first; every
 * decision of a camera environment encodes one image per agent, so this is on the hot path.
 */
import { deflateSync } from 'zlib';
import type { VisualObservationSpec } from './agent';

const SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
/** Deflate level 3: on 84 x 84 renders as small as level 6's output within a fifth, and several times faster. */
const DEFLATE_LEVEL = 3;
const GRAYSCALE = 0;
const TRUECOLOR = 2;

/** The CRC-32 of PNG chunks (ISO 3309, polynomial 0xEDB88320), a byte at a time from a table. */
const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let bit = 0; bit < 8; bit++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

function crc32(bytes: Uint8Array, start: number, end: number): number {
  let c = 0xffffffff;
  for (let i = start; i < end; i++) c = CRC_TABLE[(c ^ bytes[i]) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/** A float in [0, 1] (clamped) as the nearest of 0..255. */
function toByte(value: number): number {
  return value <= 0 ? 0 : value >= 1 ? 255 : Math.round(value * 255);
}

/** One PNG of a [channels, height, width] image (channels 1 or 3). */
export function encodeObservationPng(values: Float32Array, channels: number, height: number, width: number): Uint8Array {
  if (channels !== 1 && channels !== 3) {
    throw new Error(`A PNG-compressed observation needs 1 or 3 channels, got ${channels}: send it uncompressed.`);
  }
  const plane = height * width;
  if (values.length < channels * plane) {
    throw new Error(`A ${channels}x${height}x${width} image needs ${channels * plane} values, got ${values.length}.`);
  }
  const rowBytes = 1 + width * channels;
  const rows = new Uint8Array(rowBytes * height);
  for (let row = 0; row < height; row++) {
    let at = row * rowBytes;
    rows[at++] = 0; // filter: none
    const first = row * width;
    if (channels === 1) {
      for (let p = first; p < first + width; p++) rows[at++] = toByte(values[p]);
    } else {
      for (let p = first; p < first + width; p++) {
        rows[at++] = toByte(values[p]);
        rows[at++] = toByte(values[plane + p]);
        rows[at++] = toByte(values[2 * plane + p]);
      }
    }
  }
  const compressed = deflateSync(rows, { level: DEFLATE_LEVEL });

  const header = new Uint8Array(13);
  const headerView = new DataView(header.buffer);
  headerView.setUint32(0, width);
  headerView.setUint32(4, height);
  header[8] = 8; // bits per sample
  header[9] = channels === 1 ? GRAYSCALE : TRUECOLOR;
  // compression 0 (deflate), filter method 0, no interlace: header[10..12] stay 0.

  const chunks: Array<[string, Uint8Array]> = [
    ['IHDR', header],
    ['IDAT', compressed],
    ['IEND', new Uint8Array(0)],
  ];
  const out = new Uint8Array(SIGNATURE.length + chunks.reduce((sum, [, data]) => sum + 12 + data.length, 0));
  const view = new DataView(out.buffer);
  out.set(SIGNATURE, 0);
  let at = SIGNATURE.length;
  for (const [type, data] of chunks) {
    view.setUint32(at, data.length);
    for (let i = 0; i < 4; i++) out[at + 4 + i] = type.charCodeAt(i);
    out.set(data, at + 8);
    view.setUint32(at + 8 + data.length, crc32(out, at + 4, at + 8 + data.length));
    at += 12 + data.length;
  }
  return out;
}

/**
 * One agent's camera observation (its stacked frames oldest first, stacks x [channels, height,
 * width]) as Unity sends it compressed: one PNG per frame back to back and, when stacked, the
 * compressed_channel_mapping that puts channel c of frame s's PNG at observation channel
 * s x channels + c (a StackingSensor's).
 */
export function compressVisualObservation(spec: VisualObservationSpec, values: Float32Array): { data: Uint8Array; channelMapping?: number[] } {
  const { channels, height, width } = spec;
  const stacks = spec.stacks ?? 1;
  const frame = channels * height * width;
  const pngs = Array.from({ length: stacks }, (_, s) => encodeObservationPng(values.subarray(s * frame, (s + 1) * frame), channels, height, width));
  if (stacks === 1) return { data: pngs[0] };
  const data = new Uint8Array(pngs.reduce((total, png) => total + png.length, 0));
  let at = 0;
  for (const png of pngs) {
    data.set(png, at);
    at += png.length;
  }
  return { data, channelMapping: Array.from({ length: channels * stacks }, (_, k) => k) };
}

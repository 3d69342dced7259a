import { PNG } from 'pngjs';
import * as zlib from 'zlib';
import { behaviorSpecFromProto, stepsFromProto } from '../../src/env/steps';

import {
  decodePngObservation,
  splitConcatenatedPngs,
  visualLayout,
} from '../../src/env/png-observation';

type ColorType = 0 | 2 | 4 | 6;

/**
 * Encodes an image given as pixel(y, x) -> channel bytes. Gray images pass one byte per pixel,
 * gray+alpha two, RGB three, RGBA four.
 */
function encode(width: number, height: number, colorType: ColorType, pixel: (y: number, x: number) => number[]): Buffer {
  const png = new PNG({ width, height });
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const v = pixel(y, x);
      const i = (y * width + x) * 4;
      const rgba =
        v.length === 1 ? [v[0], v[0], v[0], 255] :
        v.length === 2 ? [v[0], v[0], v[0], v[1]] :
        v.length === 3 ? [v[0], v[1], v[2], 255] : v;
      rgba.forEach((b, k) => (png.data[i + k] = b));
    }
  }
  return PNG.sync.write(png, { colorType });
}

/** What ML-Agents makes of a byte: a float32 of byte / 255. */
const f = (byte: number) => Math.fround(byte / 255);

/** numpy's float32 mean: summed in order, then divided, each step rounded to float32. */
function f32Mean(values: number[]): number {
  let sum = 0;
  for (const v of values) sum = Math.fround(sum + v);
  return Math.fround(sum / values.length);
}

// A 2 (high) x 3 (wide) RGB image with a distinct byte for every channel of every pixel.
const H = 2;
const W = 3;
const rgbBytes = (y: number, x: number): number[] => {
  const base = (y * W + x) * 3;
  return [base * 13 % 256, (base + 1) * 13 % 256, (base + 2) * 13 % 256];
};

describe('decodePngObservation', () => {
  it('decodes an RGB PNG to HWC floats of byte / 255', () => {
    const png = encode(W, H, 2, (y, x) => (y === 0 && x === 0 ? [0, 255, 128] : rgbBytes(y, x)));
    const out = decodePngObservation(png, [H, W, 3]);
    expect(out).toBeInstanceOf(Float32Array);
    expect(out.length).toBe(H * W * 3);
    // The first pixel, literally.
    expect(out[0]).toBe(0);
    expect(out[1]).toBe(1);
    expect(out[2]).toBe(Math.fround(128 / 255));
    for (let y = 0; y < H; y++) {
      for (let x = 0; x < W; x++) {
        if (y === 0 && x === 0) continue;
        const bytes = rgbBytes(y, x);
        for (let c = 0; c < 3; c++) expect(out[(y * W + x) * 3 + c]).toBe(f(bytes[c]));
      }
    }
    expect(Math.min(...out)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...out)).toBeLessThanOrEqual(1);
  });

  it('lays the same image out as CHW when asked (Unity 2.x shapes)', () => {
    const png = encode(W, H, 2, rgbBytes);
    const out = decodePngObservation(png, [3, H, W], [], { layout: 'CHW' });
    for (let c = 0; c < 3; c++) {
      for (let y = 0; y < H; y++) {
        for (let x = 0; x < W; x++) expect(out[c * H * W + y * W + x]).toBe(f(rgbBytes(y, x)[c]));
      }
    }
  });

  it('decodes a grayscale PNG to one channel', () => {
    const gray = (y: number, x: number) => [y * 100 + x * 7];
    const out = decodePngObservation(encode(W, H, 0, gray), [H, W, 1]);
    expect(Array.from(out)).toEqual([0, 7, 14, 100, 107, 114].map(f));
  });

  it('turns an RGB PNG into grayscale by the mean of its channels when the shape has 1 channel', () => {
    const pixel = (y: number, x: number) => (y === 0 && x === 0 ? [0, 0, 255] : rgbBytes(y, x));
    const out = decodePngObservation(encode(W, H, 2, pixel), [H, W, 1]);
    expect(out[0]).toBe(Math.fround(1 / 3));
    for (let y = 0; y < H; y++) {
      for (let x = 0; x < W; x++) expect(out[y * W + x]).toBe(f32Mean(pixel(y, x).map(f)));
    }
  });

  it('splits a 6-channel stack sent as two concatenated PNGs and maps its channels', () => {
    const older = (y: number, x: number) => rgbBytes(y, x);
    const newer = (y: number, x: number) => rgbBytes(y, x).map((b) => 255 - b);
    const data = Buffer.concat([encode(W, H, 2, older), encode(W, H, 2, newer)]);
    expect(splitConcatenatedPngs(data)).toHaveLength(2);

    const out = decodePngObservation(data, [H, W, 6], [0, 1, 2, 3, 4, 5]);
    for (let y = 0; y < H; y++) {
      for (let x = 0; x < W; x++) {
        const expected = [...older(y, x), ...newer(y, x)].map(f);
        expect(Array.from(out.subarray((y * W + x) * 6, (y * W + x) * 6 + 6))).toEqual(expected);
      }
    }
    // Without a mapping the channels come in the same order.
    expect(decodePngObservation(data, [H, W, 6])).toEqual(out);
  });

  it('averages the channels a mapping sends to one observation channel (stacked grayscale)', () => {
    const a = (y: number, x: number) => rgbBytes(y, x);
    const b = (y: number, x: number) => [x * 50, y * 90, 255];
    const data = Buffer.concat([encode(W, H, 2, a), encode(W, H, 2, b)]);
    const out = decodePngObservation(data, [H, W, 2], [0, 0, 0, 1, 1, 1]);
    for (let y = 0; y < H; y++) {
      for (let x = 0; x < W; x++) {
        expect(out[(y * W + x) * 2]).toBe(f32Mean(a(y, x).map(f)));
        expect(out[(y * W + x) * 2 + 1]).toBe(f32Mean(b(y, x).map(f)));
      }
    }
  });

  it('drops channels mapped to -1 (a stacked 4-channel sensor padded to whole PNGs)', () => {
    // Two 4-channel frames, each sent as 2 RGB PNGs whose last 2 channels are padding.
    const frames = [0, 1, 2, 3].map((k) => (y: number, x: number) => [k * 40 + y, k * 40 + x, 200 + k]);
    const data = Buffer.concat(frames.map((fr) => encode(W, H, 2, fr)));
    const mapping = [0, 1, 2, 3, -1, -1, 4, 5, 6, 7, -1, -1];
    const out = decodePngObservation(data, [H, W, 8], mapping);
    for (let y = 0; y < H; y++) {
      for (let x = 0; x < W; x++) {
        const all = frames.flatMap((fr) => fr(y, x));
        const kept = all.filter((_, i) => mapping[i] >= 0).map(f);
        expect(Array.from(out.subarray((y * W + x) * 8, (y * W + x) * 8 + 8))).toEqual(kept);
      }
    }
  });

  it('keeps the first C channels when there is no mapping and the PNGs carry padding', () => {
    const first = (y: number, x: number) => [10, 20 + y, 30 + x];
    const second = (y: number, x: number) => [40, 50, 60 + x + y];
    const data = Buffer.concat([encode(W, H, 2, first), encode(W, H, 2, second)]);
    const out = decodePngObservation(data, [H, W, 4]);
    expect(Array.from(out.subarray(0, 4))).toEqual([10, 20, 30, 40].map(f));
    expect(Array.from(out.subarray(4 * 5, 4 * 6))).toEqual([10, 21, 32, 40].map(f));
  });

  it('reads the alpha channel of an RGBA PNG as a fourth channel', () => {
    const out = decodePngObservation(encode(1, 1, 6, () => [1, 2, 3, 4]), [1, 1, 4]);
    expect(Array.from(out)).toEqual([1, 2, 3, 4].map(f));
  });

  it('rejects a decoded size that does not match the shape, naming both', () => {
    const png = encode(W, H, 2, rgbBytes);
    // Width and height come from the PNG's header, checked before anything is decoded.
    expect(() => decodePngObservation(png, [W, H, 3])).toThrow(
      /PNG image 0 is 3x2 \(width x height\) but the observation's shape \[3, 2, 3\] \(HWC\) needs 2x3/,
    );
    expect(() => decodePngObservation(png, [H, W, 6])).toThrow(/expected 36 values, decoded 18/);
    expect(() => decodePngObservation(png, [H, W])).toThrow(/three positive sizes.*\[2, 3\]/);
  });

  it('rejects mappings that do not fit the data', () => {
    const data = Buffer.concat([encode(W, H, 2, rgbBytes), encode(W, H, 2, rgbBytes)]);
    expect(() => decodePngObservation(data, [H, W, 3], [0, 1, 2])).toThrow(
      /6 channels but compressed_channel_mapping has 3 entries/,
    );
    expect(() => decodePngObservation(data, [H, W, 3], [0, 0, 0, 2, 2, 2])).toThrow(/exactly 0\.\.2/);
    expect(() => decodePngObservation(data, [H, W, 1], [-1, -1, -1, -1, -1, -1])).toThrow(/every channel is dropped/);
  });

  it('rejects concatenated PNGs of different sizes', () => {
    const data = Buffer.concat([encode(W, H, 2, rgbBytes), encode(2, 2, 2, () => [1, 2, 3])]);
    expect(() => decodePngObservation(data, [H, W, 6])).toThrow(/PNG image 1 is 2x2 .*needs 3x2/);
  });
});

describe('images whose header declares more than the shape', () => {
  /** The PNG with its IHDR's width and height rewritten (and the chunk's CRC made right again). */
  function withDeclaredSize(png: Buffer, width: number, height: number): Buffer {
    const out = Buffer.from(png);
    out.writeUInt32BE(width, 16);
    out.writeUInt32BE(height, 20);
    out.writeUInt32BE(zlib.crc32(out.subarray(12, 29)), 29);
    return out;
  }

  it('reads the size from the header and refuses before decoding, whatever it declares', () => {
    const bomb = withDeclaredSize(encode(8, 8, 0, () => [7]), 16000, 16000);
    const before = process.memoryUsage().arrayBuffers;
    expect(() => decodePngObservation(bomb, [1, 8, 8], [], { layout: 'CHW' })).toThrow(
      /PNG image 0 is 16000x16000 \(width x height\) but the observation's shape \[1, 8, 8\] \(CHW\) needs 8x8/,
    );
    // Decoding it would have allocated 16000 x 16000 x 4 bytes.
    expect(process.memoryUsage().arrayBuffers - before).toBeLessThan(1024 * 1024);
  });

  it('checks each of several concatenated images, and how many there are', () => {
    const good = encode(8, 8, 2, () => [1, 2, 3]);
    const bomb = withDeclaredSize(good, 8, 100000);
    expect(() => decodePngObservation(Buffer.concat([good, bomb]), [6, 8, 8], [], { layout: 'CHW' })).toThrow(
      /PNG image 1 is 8x100000 .*needs 8x8/,
    );
    const four = Buffer.concat([good, good, good, good]);
    expect(() => decodePngObservation(four, [3, 8, 8], [], { layout: 'CHW' })).toThrow(
      /holds 4 PNG images, but its shape \[3, 8, 8\] allows at most 3/,
    );
  });
});

describe('the observations a message declares', () => {
  it('must fit the decoding budget before any batch is allocated or image decoded', () => {
    const image = encode(8, 8, 2, () => [1, 2, 3]);
    const spec = behaviorSpecFromProto(
      { action_spec: { num_continuous_actions: 1 } },
      { observations: [{ shape: [3, 20000, 20000], dimension_properties: [1, 2, 2] }] },
    );
    const agents = [{ id: 1, observations: [{ shape: [3, 20000, 20000], compression_type: 1, compressed_data: image }] }];
    expect(() => stepsFromProto(agents, spec, 'Huge', '2.0.0', 256 * 1024 * 1024)).toThrow(
      /The 1 agents of behavior Huge declare 4577\.6 MiB of observations \(shapes \[3, 20000, 20000\]\), more than the 256\.0 MiB.*--max-message-size=<MiB>/,
    );
    const negative = behaviorSpecFromProto({}, { observations: [{ shape: [-3, 8, 8] }] });
    const negativeAgents = [{ observations: [{ shape: [-3, 8, 8], compression_type: 1, compressed_data: image }] }];
    expect(() => stepsFromProto(negativeAgents, negative, 'Odd', '2.0.0', 256 * 1024 * 1024)).toThrow(
      /Observation 0 of behavior Odd has shape \[-3, 8, 8\]: sizes cannot be negative/,
    );
  });
});

describe('splitConcatenatedPngs', () => {
  function crc32(bytes: Uint8Array): number {
    let crc = 0xffffffff;
    for (const byte of bytes) {
      crc ^= byte;
      for (let k = 0; k < 8; k++) crc = crc & 1 ? (crc >>> 1) ^ 0xedb88320 : crc >>> 1;
    }
    return (crc ^ 0xffffffff) >>> 0;
  }

  /** Inserts an ancillary tEXt chunk holding `payload` just before IEND. */
  function withTextChunk(png: Buffer, payload: Buffer): Buffer {
    const iend = png.length - 12;
    const typeAndData = Buffer.concat([Buffer.from('tEXt'), payload]);
    const chunk = Buffer.alloc(12 + payload.length);
    chunk.writeUInt32BE(payload.length, 0);
    typeAndData.copy(chunk, 4);
    chunk.writeUInt32BE(crc32(typeAndData), 8 + payload.length);
    return Buffer.concat([png.subarray(0, iend), chunk, png.subarray(iend)]);
  }

  it('finds each PNG end by its chunks, not by the next signature', () => {
    const signature = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
    const tricky = withTextChunk(encode(W, H, 2, rgbBytes), Buffer.concat([Buffer.from('k\0'), signature]));
    const plain = encode(W, H, 2, (y, x) => rgbBytes(y, x).reverse());
    const data = Buffer.concat([tricky, plain]);
    const parts = splitConcatenatedPngs(data);
    expect(parts.map((p) => p.length)).toEqual([tricky.length, plain.length]);
    const out = decodePngObservation(data, [H, W, 6]);
    expect(Array.from(out.subarray(0, 6))).toEqual([...rgbBytes(0, 0), ...rgbBytes(0, 0).reverse()].map(f));
  });

  it('reports truncated, empty and foreign data clearly', () => {
    const png = encode(W, H, 2, rgbBytes);
    expect(() => splitConcatenatedPngs(png.subarray(0, png.length - 5))).toThrow(/truncated/);
    expect(() => splitConcatenatedPngs(new Uint8Array(0))).toThrow(/empty/);
    expect(() => splitConcatenatedPngs(Buffer.concat([png, Buffer.from('junk')]))).toThrow(
      new RegExp(`PNG signature at byte ${png.length} \\(image 1\\)`),
    );
  });
});

describe('visualLayout', () => {
  it('reads the layout from dimension properties, else from the Unity package version', () => {
    expect(visualLayout([1, 2, 2])).toBe('CHW');
    expect(visualLayout([2, 2, 1])).toBe('HWC');
    expect(visualLayout([], '2.3.0-exp.3')).toBe('CHW');
    expect(visualLayout(undefined, '1.9.1-preview')).toBe('HWC');
    expect(visualLayout()).toBe('HWC');
  });
});

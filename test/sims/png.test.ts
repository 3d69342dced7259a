/**
 * The engine side's PNG encoder: what it writes is a valid PNG (pngjs reads it and checks every
 * chunk's CRC) holding the image to 8 bits, and the trainer's decoder gives the image back.
 */
import { PNG } from 'pngjs';
import { SeededRandom } from '../../src/common/random';
import { decodePngObservation } from '../../src/env/png-observation';
import { encodeObservationPng } from '../../src/sims/sdk/png';

/** A float in [0, 1] (clamped) as 8 bits, the test's own way. */
const eightBits = (v: number) => Math.round(Math.min(1, Math.max(0, v)) * 255);

describe('encodeObservationPng', () => {
  it.each([
    [3, 84, 84],
    [3, 64, 84],
    [1, 7, 13],
    [3, 1, 1],
    [1, 84, 84],
  ])('writes a %ix%ix%i image that pngjs reads back to 8 bits, values outside [0, 1] clamped', (channels, height, width) => {
    const random = new SeededRandom(channels * 1000 + height * 10 + width);
    const values = Float32Array.from({ length: channels * height * width }, () => random.range(-0.25, 1.25));
    const bytes = encodeObservationPng(values, channels, height, width);
    const png = PNG.sync.read(Buffer.from(bytes)); // checks the signature, the header and every CRC
    expect([png.width, png.height]).toEqual([width, height]);
    const plane = height * width;
    let wrong = 0;
    for (let p = 0; p < plane; p++) {
      for (let c = 0; c < 3; c++) {
        if (png.data[4 * p + c] !== eightBits(values[(channels === 1 ? 0 : c) * plane + p])) wrong += 1;
      }
      if (png.data[4 * p + 3] !== 255) wrong += 1;
    }
    expect(wrong).toBe(0);
  });

  it('round-trips through the trainer\'s decoder, channel-first', () => {
    const random = new SeededRandom(9);
    const values = Float32Array.from({ length: 3 * 20 * 30 }, () => random.next());
    const decoded = decodePngObservation(encodeObservationPng(values, 3, 20, 30), [3, 20, 30], undefined, { layout: 'CHW' });
    expect(Array.from(decoded, (v) => Math.round(v * 255))).toEqual(Array.from(values, eightBits));
  });

  it('packs flat-colored renders small (21,252 bytes of rows)', () => {
    const values = new Float32Array(3 * 84 * 84).fill(0.5);
    expect(encodeObservationPng(values, 3, 84, 84).length).toBeLessThan(400);
  });

  it('refuses what a PNG observation cannot carry', () => {
    expect(() => encodeObservationPng(new Float32Array(2 * 4 * 4), 2, 4, 4)).toThrow('needs 1 or 3 channels, got 2');
    expect(() => encodeObservationPng(new Float32Array(10), 3, 4, 4)).toThrow('needs 48 values, got 10');
  });
});

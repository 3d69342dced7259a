/** Our CRC-32C: the standard check value, the @aws-crypto/crc32c package's sums (whole arrays, views and ranges), and no heap allocated. */
import { crc32c as packageCrc32c } from '@aws-crypto/crc32c';
import { execFileSync } from 'child_process';
import * as path from 'path';
import { SeededRandom } from '../../src/common/random';
import { crc32c } from '../../src/common/crc32c';
import { ROOT } from '../helpers/paths';

it('gives the CRC-32C check value of "123456789"', () => {
  expect(crc32c(Buffer.from('123456789', 'ascii'))).toBe(0xe3069283);
  expect(crc32c(new Uint8Array(0))).toBe(0);
});

it('agrees with the @aws-crypto/crc32c package on random bytes of many lengths, views included', () => {
  const random = new SeededRandom(7);
  for (const length of [1, 2, 3, 7, 64, 255, 256, 1000, 65537]) {
    const bytes = Uint8Array.from({ length: length + 5 }, () => random.int(256));
    const view = bytes.subarray(3, 3 + length);
    expect(crc32c(view)).toBe(packageCrc32c(view));
    // A range of a larger array sums the same as a view of it.
    expect(crc32c(bytes, 3, 3 + length)).toBe(packageCrc32c(view));
  }
});

it('allocates no heap however many bytes it sums (a real process, its young generation large enough to hold any garbage)', () => {
  const script = `
    const v8 = require('v8');
    const { crc32c } = require(${JSON.stringify(path.join(ROOT, 'dist', 'common', 'crc32c.js'))});
    const bytes = new Uint8Array(16 * 1024 * 1024).map((_, i) => (i * 7919) >> 3);
    crc32c(bytes.subarray(0, 1024));
    const before = v8.getHeapStatistics().used_heap_size;
    crc32c(bytes);
    process.stdout.write(String(v8.getHeapStatistics().used_heap_size - before));
  `;
  const allocated = Number(execFileSync(process.execPath, ['--min-semi-space-size=64', '--max-semi-space-size=64', '-e', script], { encoding: 'utf8' }));
  expect(allocated).toBeLessThan(1024 * 1024);
});

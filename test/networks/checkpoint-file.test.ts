import * as fs from 'fs';
import * as path from 'path';
import { crc32c } from '@aws-crypto/crc32c';
import { writeFileWhole } from '../../src/common/whole-files';
import {
  CheckpointDamagedError,
  CheckpointFormatError,
  decodeCheckpoint,
  encodeCheckpoint,
  readCheckpointFile,
} from '../../src/networks/checkpoint-file';
import { tempDir } from '../helpers/paths';

describe('checkpoint file', () => {
  const arrays = new Map<string, Float32Array | Float64Array>([
    ['parameters', new Float32Array([1.5, -2.25, 3e-8])],
    ['normalizer.mean', new Float64Array([0.1, 1e300])],
    ['empty', new Float32Array(0)],
  ]);

  it('round-trips named float32 and float64 arrays and the description', () => {
    const bytes = encodeCheckpoint({ kind: 'ppo', step: 12 }, arrays);
    const decoded = decodeCheckpoint(bytes);
    expect(decoded.meta).toEqual({ kind: 'ppo', step: 12 });
    expect([...decoded.arrays.keys()]).toEqual(['parameters', 'normalizer.mean', 'empty']);
    expect(decoded.arrays.get('parameters')).toEqual(arrays.get('parameters'));
    expect(decoded.arrays.get('normalizer.mean')).toEqual(arrays.get('normalizer.mean'));
    expect(decoded.arrays.get('empty')).toEqual(new Float32Array(0));
  });

  it('has the documented layout: magic, header length, JSON header, 8-aligned data, CRC32C of all before it', () => {
    const bytes = encodeCheckpoint({ a: 1 }, new Map([['x', new Float64Array([2.5])]]));
    expect(Buffer.from(bytes.subarray(0, 8)).toString('ascii')).toBe('MLTSCKPT');
    const view = new DataView(bytes.buffer);
    const headerLength = view.getUint32(8, true);
    const header = JSON.parse(Buffer.from(bytes.subarray(12, 12 + headerLength)).toString('utf8'));
    expect(header).toEqual({ format: 2, meta: { a: 1 }, arrays: [{ name: 'x', dtype: 'float64', length: 1, offset: 0 }] });
    const dataStart = Math.ceil((12 + headerLength) / 8) * 8;
    expect(view.getFloat64(dataStart, true)).toBe(2.5);
    expect(bytes.length).toBe(dataStart + 8 + 4);
    expect(view.getUint32(dataStart + 8, true)).toBe(crc32c(bytes.subarray(0, dataStart + 8)));
  });

  it('refuses a checkpoint with a block overwritten (same size) as damaged', () => {
    const big = new Map([['parameters', Float32Array.from({ length: 4096 }, (_, i) => Math.sin(i))]]);
    const bytes = encodeCheckpoint({ kind: 'ppo' }, big);
    const damaged = Uint8Array.from(bytes);
    damaged.fill(0x7f, 4096, 8192);
    expect(damaged.length).toBe(bytes.length);
    expect(() => decodeCheckpoint(damaged)).toThrow(CheckpointDamagedError);
    expect(() => decodeCheckpoint(damaged)).toThrow('its bytes no longer match the checksum');
    // One flipped bit too.
    const flipped = Uint8Array.from(bytes);
    flipped[200] ^= 1;
    expect(() => decodeCheckpoint(flipped)).toThrow(CheckpointDamagedError);
  });

  it('still reads format 1, written before checksums, and names the formats it reads for others', () => {
    const header = Buffer.from(JSON.stringify({ format: 1, meta: { step: 5 }, arrays: [{ name: 'x', dtype: 'float32', length: 2, offset: 0 }] }));
    const dataStart = Math.ceil((12 + header.length) / 8) * 8;
    const formatOne = new Uint8Array(dataStart + 8);
    const view = new DataView(formatOne.buffer);
    formatOne.set(Buffer.from('MLTSCKPT'), 0);
    view.setUint32(8, header.length, true);
    formatOne.set(header, 12);
    view.setFloat32(dataStart, 1.5, true);
    view.setFloat32(dataStart + 4, -3, true);
    const decoded = decodeCheckpoint(formatOne);
    expect(decoded.meta).toEqual({ step: 5 });
    expect(decoded.arrays.get('x')).toEqual(Float32Array.from([1.5, -3]));

    const formatNine = Uint8Array.from(formatOne);
    formatNine.set(Buffer.from(header.toString().replace('"format":1', '"format":9')), 12);
    expect(() => decodeCheckpoint(formatNine)).toThrow('The checkpoint has format 9; this version reads formats 1 and 2.');
  });

  it('says what is wrong with a file that is not a checkpoint or is cut short', () => {
    expect(() => decodeCheckpoint(new Uint8Array([1, 2, 3]))).toThrow(CheckpointFormatError);
    expect(() => decodeCheckpoint(Buffer.from('PK\u0003\u0004 some zip file'))).toThrow('does not start with MLTSCKPT');
    const bytes = encodeCheckpoint({}, arrays);
    expect(() => decodeCheckpoint(bytes.subarray(0, bytes.length - 4))).toThrow(CheckpointDamagedError);
  });

  it('writes files whole, replacing the previous one', () => {
    const dir = tempDir('checkpoint');
    const file = path.join(dir, 'Behavior-100.ckpt');
    writeFileWhole(file, encodeCheckpoint({ step: 1 }, arrays));
    writeFileWhole(file, encodeCheckpoint({ step: 2 }, arrays));
    expect(readCheckpointFile(file).meta).toEqual({ step: 2 });
    expect(fs.readdirSync(dir)).toEqual(['Behavior-100.ckpt']);
  });
});

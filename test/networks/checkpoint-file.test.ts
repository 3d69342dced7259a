import * as fs from 'fs';
import * as path from 'path';
import {
  CheckpointFormatError,
  decodeCheckpoint,
  encodeCheckpoint,
  readCheckpointFile,
  writeCheckpointFile,
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

  it('has the documented layout: magic, header length, JSON header, 8-aligned data', () => {
    const bytes = encodeCheckpoint({ a: 1 }, new Map([['x', new Float64Array([2.5])]]));
    expect(Buffer.from(bytes.subarray(0, 8)).toString('ascii')).toBe('MLTSCKPT');
    const headerLength = new DataView(bytes.buffer).getUint32(8, true);
    const header = JSON.parse(Buffer.from(bytes.subarray(12, 12 + headerLength)).toString('utf8'));
    expect(header).toEqual({ format: 1, meta: { a: 1 }, arrays: [{ name: 'x', dtype: 'float64', length: 1, offset: 0 }] });
    const dataStart = Math.ceil((12 + headerLength) / 8) * 8;
    expect(new DataView(bytes.buffer).getFloat64(dataStart, true)).toBe(2.5);
    expect(bytes.length).toBe(dataStart + 8);
  });

  it('says what is wrong with a file that is not a checkpoint or is cut short', () => {
    expect(() => decodeCheckpoint(new Uint8Array([1, 2, 3]))).toThrow(CheckpointFormatError);
    expect(() => decodeCheckpoint(Buffer.from('PK\u0003\u0004 some zip file'))).toThrow('does not start with MLTSCKPT');
    const bytes = encodeCheckpoint({}, arrays);
    expect(() => decodeCheckpoint(bytes.subarray(0, bytes.length - 4))).toThrow('array normalizer.mean runs past the end');
  });

  it('writes files whole, replacing the previous one', () => {
    const dir = tempDir('checkpoint');
    const file = path.join(dir, 'Behavior-100.mlts');
    writeCheckpointFile(file, encodeCheckpoint({ step: 1 }, arrays));
    writeCheckpointFile(file, encodeCheckpoint({ step: 2 }, arrays));
    expect(readCheckpointFile(file).meta).toEqual({ step: 2 });
    expect(fs.readdirSync(dir)).toEqual(['Behavior-100.mlts']);
  });
});

import * as tf from '@tensorflow/tfjs';
import { tensorValues, tidyValues } from '../../src/networks/tensor-io';

describe('tidyValues', () => {
  it('gives what the work computed and frees every tensor it made', () => {
    const before = tf.memory().numTensors;
    const values = tidyValues(() => tensorValues(tf.add(tf.tensor1d([1, 2, 3]), tf.scalar(1))));
    expect(Array.from(values)).toEqual([2, 3, 4]);
    expect(tf.memory().numTensors).toBe(before);
  });

  it('frees the tensors of work that throws, and passes the error on', () => {
    const before = tf.memory().numTensors;
    expect(() =>
      tidyValues(() => {
        tf.ones([4]);
        throw new Error('stopped midway');
      }),
    ).toThrow('stopped midway');
    expect(tf.memory().numTensors).toBe(before);
  });

  it('leaves its result unread, where tf.tidy looks at every element of a typed array for tensors', () => {
    const readKeys = (counter: { count: number }) =>
      new Proxy(new Float32Array(1000), {
        ownKeys: (target) => {
          counter.count++;
          return Reflect.ownKeys(target);
        },
      });
    const byTidy = { count: 0 };
    tf.tidy(() => readKeys(byTidy));
    // The control: tf.tidy enumerates the result's keys, the cost tidyValues exists to avoid.
    expect(byTidy.count).toBeGreaterThan(0);
    const byTidyValues = { count: 0 };
    tidyValues(() => readKeys(byTidyValues));
    expect(byTidyValues.count).toBe(0);
  });
});

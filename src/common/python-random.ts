/**
 * CPython's random.Random as seeded with a string, drawing as its getrandbits and choice do, so
 * that a port of a Python program meets the same random numbers. The generator is the Mersenne
 * Twister of the mersenne-twister package (the reference MT19937, init_by_array included); what
 * is CPython's own is how a string becomes its key and how choice turns 32-bit words into an index.
 */
import { createHash } from 'crypto';
import MersenneTwister from 'mersenne-twister';

export class PythonRandom {
  private readonly twister = new MersenneTwister();

  /** As random.Random(seed) with a str seed (seed version 2, Python 3.2 onward). */
  constructor(seed: string) {
    // The seed becomes the big-endian integer of its UTF-8 bytes followed by their SHA-512, which
    // CPython hands to init_by_array as 32-bit words, least significant first.
    const text = Buffer.from(seed, 'utf8');
    const bytes = Buffer.concat([text, createHash('sha512').update(text).digest()]);
    const words: number[] = [];
    for (let end = bytes.length; end > 0; end -= 4) {
      let word = 0;
      for (let i = Math.max(0, end - 4); i < end; i++) word = word * 256 + bytes[i];
      words.push(word);
    }
    // As many words as the integer's bits need: leading zero bytes count for nothing.
    while (words.length > 1 && words[words.length - 1] === 0) words.pop();
    this.twister.init_by_array(words, words.length);
  }

  /** random.getrandbits(k) for 1 <= k <= 32: the top k bits of the next 32-bit output. */
  getrandbits(k: number): number {
    if (!Number.isInteger(k) || k < 1 || k > 32) throw new Error(`PythonRandom.getrandbits takes 1 to 32 bits, got ${k}.`);
    return this.twister.random_int() >>> (32 - k);
  }

  /** random.choice(items): an index below the length by rejection over as many bits as it needs. */
  choice<T>(items: readonly T[]): T {
    const n = items.length;
    if (n === 0) throw new Error('PythonRandom.choice needs at least one item.');
    const bits = 32 - Math.clz32(n);
    let index = this.getrandbits(bits);
    while (index >= n) index = this.getrandbits(bits);
    return items[index];
  }
}

/** Python's repr() of a float: the shortest round trip, as JavaScript's, with ".0" on whole numbers. */
export function pythonFloatRepr(value: number): string {
  return Number.isInteger(value) ? value.toFixed(1) : String(value);
}

/** Python's repr() of a tuple of ints, e.g. "(3, 20, 20)" or "(1,)". */
export function pythonTupleRepr(values: readonly number[]): string {
  return values.length === 1 ? `(${values[0]},)` : `(${values.join(', ')})`;
}

/** Python's repr() of a list of plain strings (no quotes or backslashes in them), e.g. "['1D']". */
export function pythonStringListRepr(values: readonly string[]): string {
  for (const value of values) {
    if (/['"\\]/.test(value) || /[^\x20-\x7e]/.test(value)) throw new Error(`pythonStringListRepr: ${JSON.stringify(value)} needs escaping this helper does not do.`);
  }
  return `[${values.map((value) => `'${value}'`).join(', ')}]`;
}

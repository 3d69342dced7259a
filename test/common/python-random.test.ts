/**
 * PythonRandom against CPython 3.11's random.Random (the figures below were printed by CPython;
 * upstream's test environments run on Python 3.10, whose string seeding and choice are the same).
 */
import { PythonRandom, pythonFloatRepr, pythonStringListRepr, pythonTupleRepr } from '../../src/common/python-random';

const SEED = "(['1D'], 0.2, 0, 1, 0, (3, 20, 20), 1, (10, 5), (1, 0))";

describe('PythonRandom', () => {
  it('draws the 32-bit words of random.Random(str) seeded with the same text', () => {
    const random = new PythonRandom(SEED);
    expect([random.getrandbits(32), random.getrandbits(32), random.getrandbits(32)]).toEqual([3982658820, 961423798, 3421349483]);
    expect(new PythonRandom('x').getrandbits(32)).toBe(2709212627);
  });

  it('chooses as random.choice does (rejecting indices past the end) and takes the top bits for getrandbits(k)', () => {
    const random = new PythonRandom(SEED);
    for (let i = 0; i < 3; i++) random.getrandbits(32);
    expect(random.choice([0, 1, 2, 3, 4])).toBe(1);
    expect(random.choice([0, 1, 2, 3, 4])).toBe(3);
    expect(random.getrandbits(7)).toBe(42);
  });

  it('gives choice([-1, 1]) the sequence CPython gives', () => {
    const random = new PythonRandom(SEED);
    const drawn = Array.from({ length: 14 }, () => random.choice([-1, 1]));
    expect(drawn).toEqual([-1, -1, 1, 1, 1, 1, -1, -1, 1, -1, -1, -1, 1, 1]);
  });

  it('refuses bit counts it cannot draw and an empty choice', () => {
    const random = new PythonRandom(SEED);
    expect(() => random.getrandbits(33)).toThrow(/1 to 32 bits/);
    expect(() => random.choice([])).toThrow(/at least one item/);
  });
});

describe('Python reprs', () => {
  it('writes floats, tuples and lists of names as repr() does', () => {
    expect([pythonFloatRepr(0.2), pythonFloatRepr(0.5), pythonFloatRepr(1)]).toEqual(['0.2', '0.5', '1.0']);
    expect([pythonTupleRepr([3, 20, 20]), pythonTupleRepr([1])]).toEqual(['(3, 20, 20)', '(1,)']);
    expect(pythonStringListRepr(['1D?team=0', '1D?team=1'])).toBe("['1D?team=0', '1D?team=1']");
    expect(() => pythonStringListRepr(["it's"])).toThrow(/escaping/);
  });
});

/**
 * The heap guard: when it collects, when it stops the run, what it says; and V8's heap as it
 * reads it, in a real Node process with a heap limit of its own.
 */
import { execFileSync } from 'child_process';
import * as path from 'path';
import { HIGH_WATER, HeapExhaustedError, HeapGuard, HeapProbe } from '../../src/trainers/heap-guard';
import { ROOT } from '../helpers/paths';

const MiB = 1024 * 1024;

/** A heap whose readings the test sets; each collection takes `collectionMs` of its clock. */
class FakeHeap implements HeapProbe {
  readonly limit = 100 * MiB;
  inUse = 0;
  alive = 0;
  clock = 0;
  readings = 0;
  collections = 0;
  collectionMs = 10;

  used(): number {
    this.readings += 1;
    return this.inUse;
  }

  usedAfterCollection(): number {
    this.collections += 1;
    this.clock += this.collectionMs;
    return this.alive;
  }

  now(): number {
    return this.clock;
  }
}

describe('HeapGuard', () => {
  it('does not collect while the heap in use, garbage included, is below the mark, and reads it at most every 100 ms', () => {
    const heap = Object.assign(new FakeHeap(), { inUse: 69.9 * MiB, alive: 69.9 * MiB });
    const guard = new HeapGuard(heap);
    expect(HIGH_WATER).toBe(0.7);
    expect(guard.check()).toBeNull();
    expect([heap.readings, heap.collections]).toEqual([1, 0]);
    heap.inUse = 90 * MiB;
    heap.clock = 99;
    expect(guard.check()).toBeNull();
    expect([heap.readings, heap.collections]).toEqual([1, 0]);
    heap.clock = 100;
    guard.check();
    expect([heap.readings, heap.collections]).toEqual([2, 1]);
  });

  it('stops the run when what is alive after a full collection reaches the mark', () => {
    const heap = Object.assign(new FakeHeap(), { inUse: 90 * MiB, alive: 70 * MiB });
    expect(new HeapGuard(heap).check()).toEqual({ live: 70 * MiB, limit: 100 * MiB });
    expect(heap.collections).toBe(1);
  });

  it('goes on when the collection frees the heap below the mark, and collects again only after 19 times its duration', () => {
    const heap = Object.assign(new FakeHeap(), { inUse: 95 * MiB, alive: 60 * MiB, collectionMs: 20 });
    const guard = new HeapGuard(heap);
    expect(guard.check()).toBeNull();
    expect(heap.collections).toBe(1);
    // The collection began at 0 and took 20 ms: the next may begin at 400 ms, 5% of the time.
    heap.alive = 80 * MiB;
    for (const clock of [100, 200, 300]) {
      heap.clock = clock;
      expect(guard.check()).toBeNull();
    }
    expect([heap.readings, heap.collections]).toEqual([4, 1]);
    heap.clock = 400;
    expect(guard.check()).toEqual({ live: 80 * MiB, limit: 100 * MiB });
    expect(heap.collections).toBe(2);
  });

  it('takes its mark as a share of the limit', () => {
    const heap = Object.assign(new FakeHeap(), { inUse: 55 * MiB, alive: 50 * MiB });
    expect(new HeapGuard(heap, 0.7).check()).toBeNull();
    expect(heap.collections).toBe(0);
    expect(new HeapGuard(heap, 0.5).check()).toEqual({ live: 50 * MiB, limit: 100 * MiB });
  });
});

it('HeapExhaustedError says how much is alive of what limit, what the run does, and how to go on', () => {
  const error = new HeapExhaustedError({ live: 71 * MiB, limit: 96 * MiB }, 'The run stops here and saves its models in results/x.');
  expect(error.message).toBe(
    'The trainer is running out of memory: 71 MiB of its JavaScript heap are still in use after a full garbage ' +
      'collection, 74% of the 96 MiB Node gives it, and Node ends a process whose heap runs out without saving ' +
      'anything. The run stops here and saves its models in results/x. To go on, resume with more heap: ' +
      'NODE_OPTIONS=--max-old-space-size=192 npx mlagents-learn <the same arguments> --resume (the size in MiB); ' +
      "or make the run hold less: a smaller time_horizon (each agent's steps are kept until its trajectory is cut " +
      'there) or buffer_size, fewer agents or environments (--num-envs).',
  );
});

it("reads V8's heap in a real process: the limit --max-old-space-size set, and what a full collection leaves", () => {
  const script = `
    const { v8Heap } = require(${JSON.stringify(path.join(ROOT, 'dist', 'trainers', 'heap-guard.js'))});
    const heap = v8Heap();
    let garbage = [];
    for (let i = 0; i < 200000; i++) garbage.push({ i });
    const kept = garbage.slice(0, 100000);
    garbage = null;
    const inUse = heap.used();
    const alive = heap.usedAfterCollection();
    process.stdout.write(JSON.stringify({ limit: heap.limit, inUse, alive, kept: kept.length }));
  `;
  const reading = JSON.parse(execFileSync(process.execPath, ['--max-old-space-size=100', '-e', script], { encoding: 'utf8' }));
  expect(reading.limit).toBe(100 * MiB);
  // 100000 objects of 32 bytes and their array stay alive; the other 100000 are freed.
  expect(reading.alive).toBeGreaterThan(4 * MiB);
  expect(reading.alive).toBeLessThan(reading.inUse - 2 * MiB);
});

/**
 * Stops a run that is about to run out of JavaScript heap, while it can still save. V8 does not
 * throw when its heap is full: it aborts the process ("JavaScript heap out of memory") and no
 * JavaScript runs after that, so no model could be saved. The trainer controller asks the guard
 * at each turn of its loop, where all that grows the heap happens (steps decoded, experience kept,
 * updates; a timer would only add checks while the loop waits). What is in use includes garbage
 * that V8 collects when it sees fit, so only when that passes the mark does the guard force a full
 * collection to learn what is alive; once the live objects pass HIGH_WATER of the heap's limit,
 * the run ends as on any fatal error: models saved, environments closed, and an error that says
 * what happened and what to change.
 *
 * Node offers nothing that runs JavaScript at the limit: --heapsnapshot-near-heap-limit and
 * v8.setHeapSnapshotNearHeapLimit write a heap snapshot from V8's near-limit callback, in C++,
 * which needs more memory still and saves no model. Hence this check, made early enough.
 */
import { performance } from 'perf_hooks';
import * as v8 from 'v8';
import * as vm from 'vm';

/**
 * The share of the heap's limit that the live objects may fill before the run stops. V8 gives up
 * before the heap is full: once the live heap stays above about 80% of the limit while its
 * collections free little, it aborts with "Ineffective mark-compacts near heap limit" (a run
 * with a 128 MiB heap died so at 103 MiB; saving a model of a million values failed with the
 * heap 80% full, and passed at 70% and 75%). Stopping at 70% leaves the step in flight and the
 * save that room.
 */
export const HIGH_WATER = 0.7;

/** The heap is read at most this often (ms): a reading costs microseconds, a turn of the loop may take less than a millisecond. */
const READING_INTERVAL_MS = 100;

/** Forced collections take at most this share of the run's time, however close the heap stays to the mark. */
const MAX_COLLECTION_SHARE = 0.05;

/**
 * V8 sizes its young generation (two semi-spaces and a large-object space for new objects, each
 * at most 16 MiB on 64-bit machines) inside heap_size_limit; the old generation, where objects that
 * live on are kept and whose limit --max-old-space-size sets, gets the rest. On machines where the
 * young generation is smaller, the limit read here is lower than the true one: the guard stops early.
 */
const YOUNG_GENERATION_BYTES = 3 * 16 * 1024 * 1024;

/** What the guard reads of the heap: V8's own (v8Heap), or a test's. */
export interface HeapProbe {
  /** The most the heap may hold, in bytes: the old generation's limit. */
  readonly limit: number;
  /** Bytes in use now, garbage not yet collected included (cheap). */
  used(): number;
  /** Bytes still in use after a full garbage collection (costly: it collects). */
  usedAfterCollection(): number;
  /** A clock in milliseconds, to pace the collections. */
  now(): number;
}

/** The heap when the guard stopped the run: bytes alive after a full collection, and the limit. */
export interface HeapReading {
  readonly live: number;
  readonly limit: number;
}

export class HeapGuard {
  private nextReadingAt = -Infinity;
  /** No collection is forced before this time: those of the past stay within MAX_COLLECTION_SHARE. */
  private nextCollectionAt = -Infinity;

  constructor(
    private readonly probe: HeapProbe = v8Heap(),
    private readonly highWater = HIGH_WATER,
  ) {}

  /** The heap when its live objects passed the mark; null while it has room. */
  check(): HeapReading | null {
    const start = this.probe.now();
    if (start < this.nextReadingAt) return null;
    this.nextReadingAt = start + READING_INTERVAL_MS;
    const mark = this.highWater * this.probe.limit;
    // What is in use bounds what is alive, so most readings end here, without collecting.
    if (this.probe.used() < mark || start < this.nextCollectionAt) return null;
    const live = this.probe.usedAfterCollection();
    if (live >= mark) return { live, limit: this.probe.limit };
    this.nextCollectionAt = start + (this.probe.now() - start) / MAX_COLLECTION_SHARE;
    return null;
  }
}

/** The run stopped before the heap ran out. `stopping` says what the run does now (what it saves, where). */
export class HeapExhaustedError extends Error {
  override name = 'HeapExhaustedError';

  constructor({ live, limit }: HeapReading, stopping: string) {
    super(
      `The trainer is running out of memory: ${mebibytes(live)} MiB of its JavaScript heap are still in use after a ` +
        `full garbage collection, ${Math.round((100 * live) / limit)}% of the ${mebibytes(limit)} MiB Node gives it, ` +
        `and Node ends a process whose heap runs out without saving anything. ${stopping} To go on, resume with more ` +
        `heap: NODE_OPTIONS=--max-old-space-size=${2 * mebibytes(limit)} npx mlagents-learn <the same arguments> --resume ` +
        `(the size in MiB); or make the run hold less: a smaller time_horizon (each agent's steps are kept until its ` +
        `trajectory is cut there) or buffer_size, fewer agents or environments (--num-envs).`,
    );
  }
}

/** V8's heap, as HeapProbe reads it. */
export function v8Heap(): HeapProbe {
  let collect: (() => void) | null = null;
  return {
    limit: v8.getHeapStatistics().heap_size_limit - YOUNG_GENERATION_BYTES,
    used: () => v8.getHeapStatistics().used_heap_size,
    usedAfterCollection: () => {
      collect ??= fullCollection();
      collect();
      return v8.getHeapStatistics().used_heap_size;
    },
    now: () => performance.now(),
  };
}

/** V8's full garbage collection: --expose-gc hands `gc` to the contexts made after it is set. */
function fullCollection(): () => void {
  v8.setFlagsFromString('--expose-gc');
  return vm.runInNewContext('gc') as () => void;
}

function mebibytes(bytes: number): number {
  return Math.round(bytes / (1024 * 1024));
}

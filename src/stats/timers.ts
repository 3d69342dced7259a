/**
 * Hierarchical timers as ML-Agents keeps them (mlagents_envs/timers.py), written at the end of a
 * run to run_logs/timers.json in upstream's shape:
 *
 *     { "name": "root", "gauges": {...}, "metadata": {...}, "total": s, "count": 1, "self": s,
 *       "children": { "<block>": { "total", "count", "is_parallel"?, "self", "children"? } } }
 *
 * A block's node is found under the block that encloses it. Python keeps one stack per thread;
 * here asynchronous code interleaves on one thread, so the enclosing block is tracked per
 * asynchronous context (AsyncLocalStorage), which keeps concurrent tasks' timings apart.
 */
import { AsyncLocalStorage } from 'async_hooks';
import * as fs from 'fs';
import * as path from 'path';
import { writeFileWhole } from '../common/whole-files';

export const TIMER_FORMAT_VERSION = '0.1.0';
export const TIMERS_FILE_NAME = 'timers.json';

/** One node of timers.json. The root alone has name, gauges and metadata. */
export interface TimerTree {
  name?: 'root';
  gauges?: Record<string, { value: number; min: number; max: number; count: number }>;
  metadata?: Record<string, string>;
  total: number;
  count: number;
  /** Set when the block's time was merged from work done in parallel (its children may add up to more). */
  is_parallel?: true;
  /** Total minus the children's totals. */
  self: number;
  children?: Record<string, TimerTree>;
}

/** The time spent in one block of code, summed over its runs. */
export class TimerNode {
  readonly children = new Map<string, TimerNode>();
  total = 0;
  count = 0;
  isParallel = false;

  child(name: string): TimerNode {
    let node = this.children.get(name);
    if (node === undefined) {
      node = new TimerNode();
      this.children.set(name, node);
    }
    return node;
  }

  addTime(seconds: number): void {
    this.total += seconds;
    this.count += 1;
  }

  /** Adds another stack's timings (e.g. from a worker thread) to this node and its children. */
  merge(tree: TimerTree, isParallel: boolean): void {
    this.total += tree.total;
    this.count += tree.count;
    this.isParallel ||= isParallel;
    for (const [name, child] of Object.entries(tree.children ?? {})) this.child(name).merge(child, isParallel);
  }

  toTree(): TimerTree {
    const children: Record<string, TimerTree> = {};
    let childrenTotal = 0;
    for (const [name, child] of this.children) {
      children[name] = child.toTree();
      childrenTotal += child.total;
    }
    return {
      total: this.total,
      count: this.count,
      ...(this.isParallel ? { is_parallel: true as const } : {}),
      self: Math.max(0, this.total - childrenTotal),
      ...(this.children.size > 0 ? { children } : {}),
    };
  }
}

/** The latest value of a metric, with its extremes and how often it was set. */
class GaugeNode {
  min: number;
  max: number;
  count = 1;

  constructor(public value: number) {
    this.min = value;
    this.max = value;
  }

  update(value: number): void {
    this.min = Math.min(this.min, value);
    this.max = Math.max(this.max, value);
    this.value = value;
    this.count += 1;
  }
}

export class TimerStack {
  private root = new TimerNode();
  private startSeconds: number;
  private readonly enclosing = new AsyncLocalStorage<TimerNode>();
  private readonly gauges = new Map<string, GaugeNode>();
  private readonly metadata = new Map<string, string>();

  /** `clock` measures durations in seconds; `wallClock` gives seconds since the Unix epoch. */
  constructor(
    private readonly clock: () => number = () => performance.now() / 1000,
    private readonly wallClock: () => number = () => Date.now() / 1000,
  ) {
    this.startSeconds = clock();
    this.addDefaultMetadata();
  }

  /**
   * Runs `block` timed as `name` under the enclosing timed block. A block that returns a promise
   * is timed until the promise settles.
   */
  time<T>(name: string, block: () => T): T {
    const node = (this.enclosing.getStore() ?? this.root).child(name);
    const start = this.clock();
    const stop = () => node.addTime(this.clock() - start);
    let result: T;
    try {
      result = this.enclosing.run(node, block);
    } catch (error) {
      stop();
      throw error;
    }
    if (result instanceof Promise) return result.finally(stop) as T;
    stop();
    return result;
  }

  /** Records a metric's latest value; NaN is ignored, as upstream. */
  setGauge(name: string, value: number): void {
    if (Number.isNaN(value)) return;
    const gauge = this.gauges.get(name);
    if (gauge === undefined) this.gauges.set(name, new GaugeNode(value));
    else gauge.update(value);
  }

  addMetadata(key: string, value: string): void {
    this.metadata.set(key, value);
  }

  /** Adds the timings of another stack, under `rootName` or at the root; marked parallel by default. */
  merge(tree: TimerTree, rootName?: string, isParallel = true): void {
    (rootName === undefined ? this.root : this.root.child(rootName)).merge(tree, isParallel);
  }

  /** The tree written to timers.json: the root's total is the time since the stack started. */
  timingTree(): TimerTree {
    this.root.total = this.clock() - this.startSeconds;
    this.root.count = 1;
    const header: Pick<TimerTree, 'name' | 'gauges' | 'metadata'> = { name: 'root' };
    if (this.gauges.size > 0) {
      header.gauges = {};
      for (const [name, gauge] of this.gauges) {
        header.gauges[name] = { value: gauge.value, min: gauge.min, max: gauge.max, count: gauge.count };
      }
    }
    this.metadata.set('end_time_seconds', String(Math.trunc(this.wallClock())));
    header.metadata = Object.fromEntries(this.metadata);
    return { ...header, ...this.root.toTree() };
  }

  reset(): void {
    this.root = new TimerNode();
    this.startSeconds = this.clock();
    this.gauges.clear();
    this.metadata.clear();
    this.addDefaultMetadata();
  }

  private addDefaultMetadata(): void {
    this.metadata.set('timer_format_version', TIMER_FORMAT_VERSION);
    this.metadata.set('start_time_seconds', String(Math.trunc(this.wallClock())));
    // Upstream records python_version here; this trainer runs on Node.
    this.metadata.set('node_version', process.version);
    this.metadata.set('command_line_arguments', process.argv.slice(1).join(' '));
  }
}

/** The process's timers, as upstream's module-level stack: code anywhere can time itself. */
export const timers = new TimerStack();

/** Writes `<runLogsDir>/timers.json` (indented by 4, as upstream's json.dump). */
export function writeTimingTree(runLogsDir: string, stack: TimerStack = timers): string {
  fs.mkdirSync(runLogsDir, { recursive: true });
  const filePath = path.join(runLogsDir, TIMERS_FILE_NAME);
  writeFileWhole(filePath, JSON.stringify(stack.timingTree(), null, 4));
  return filePath;
}

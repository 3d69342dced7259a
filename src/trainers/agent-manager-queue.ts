/**
 * A first-in first-out queue between the acting side and a trainer (upstream's AgentManagerQueue):
 * trajectories go to the trainer, updated policies come back.
 *
 * Upstream's bounded queue blocks the producer's thread when full. One event loop cannot block, so
 * here `put` always succeeds, and a producer that must wait for the trainer awaits `whenNotFull()`
 * before it produces more (the environment manager does so before its next step).
 */
export class AgentManagerQueue<T> {
  private items: T[] = [];
  private head = 0;
  private waiting: Array<() => void> = [];

  constructor(
    readonly behaviorId: string,
    /** The number of items at which the queue counts as full; 0 means never full (upstream's maxlen). */
    readonly maxlen = 0,
  ) {}

  get size(): number {
    return this.items.length - this.head;
  }

  empty(): boolean {
    return this.size === 0;
  }

  isFull(): boolean {
    return this.maxlen > 0 && this.size >= this.maxlen;
  }

  put(item: T): void {
    this.items.push(item);
  }

  /** The oldest item, or undefined when the queue is empty (upstream's get_nowait raises instead). */
  tryGet(): T | undefined {
    if (this.empty()) return undefined;
    const item = this.items[this.head];
    this.items[this.head] = undefined as T;
    this.head++;
    // Drop the consumed front now and then, so that the array does not grow for ever.
    if (this.head > 64 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    this.wakeProducers();
    return item;
  }

  /** Every item, oldest first, leaving the queue empty. */
  drain(): T[] {
    const all = this.items.slice(this.head);
    this.items = [];
    this.head = 0;
    this.wakeProducers();
    return all;
  }

  /** Resolves once the queue is not full: at once if it is not full now. */
  whenNotFull(): Promise<void> {
    if (!this.isFull()) return Promise.resolve();
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  private wakeProducers(): void {
    if (this.isFull() || this.waiting.length === 0) return;
    const waiting = this.waiting;
    this.waiting = [];
    for (const resolve of waiting) resolve();
  }
}

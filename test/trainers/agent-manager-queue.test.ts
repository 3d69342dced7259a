import { AgentManagerQueue } from '../../src/trainers/agent-manager-queue';

describe('AgentManagerQueue', () => {
  it('gives items back first in, first out', () => {
    const queue = new AgentManagerQueue<number>('3DBall');
    expect(queue.behaviorId).toBe('3DBall');
    expect(queue.empty()).toBe(true);
    expect(queue.tryGet()).toBeUndefined();
    for (let i = 0; i < 200; i++) queue.put(i);
    expect(queue.size).toBe(200);
    for (let i = 0; i < 150; i++) expect(queue.tryGet()).toBe(i);
    queue.put(200);
    expect(queue.drain()).toEqual(Array.from({ length: 51 }, (_, i) => 150 + i));
    expect(queue.empty()).toBe(true);
  });

  it('is never full with maxlen 0, as upstream', () => {
    const queue = new AgentManagerQueue<number>('b');
    for (let i = 0; i < 1000; i++) queue.put(i);
    expect(queue.maxlen).toBe(0);
    expect(queue.isFull()).toBe(false);
  });

  it('keeps a producer waiting while full, and lets it go when the consumer takes an item', async () => {
    const queue = new AgentManagerQueue<string>('b', 2);
    await queue.whenNotFull();
    queue.put('a');
    queue.put('b');
    queue.put('c'); // a put never fails: a step's trajectories may overshoot
    expect(queue.isFull()).toBe(true);
    let released = false;
    const waiting = queue.whenNotFull().then(() => {
      released = true;
    });
    await Promise.resolve();
    expect(queue.tryGet()).toBe('a');
    await Promise.resolve();
    expect(released).toBe(false); // still 2 waiting items
    expect(queue.tryGet()).toBe('b');
    await waiting;
    expect(released).toBe(true);
    expect(queue.size).toBe(1);
  });

  it('lets waiting producers go when drained', async () => {
    const queue = new AgentManagerQueue<number>('b', 1);
    queue.put(1);
    const waiting = queue.whenNotFull();
    expect(queue.drain()).toEqual([1]);
    await expect(waiting).resolves.toBeUndefined();
  });
});

/** Mean milliseconds per call of `run`, after `warmUps` calls, over at least minSeconds and minCalls calls. */
export function measure(run: (call: number) => void, minSeconds: number, minCalls = 20, warmUps = Math.min(20, minCalls)): number {
  for (let i = 0; i < warmUps; i++) run(i);
  let calls = 0;
  const start = performance.now();
  while (performance.now() - start < minSeconds * 1000 || calls < minCalls) run(calls++);
  return (performance.now() - start) / calls;
}

/** measure() for calls that finish asynchronously (a WebGPU pass awaits its reads). */
export async function measureAsync(run: (call: number) => Promise<unknown>, minSeconds: number, minCalls = 20, warmUps = Math.min(20, minCalls)): Promise<number> {
  for (let i = 0; i < warmUps; i++) await run(i);
  let calls = 0;
  const start = performance.now();
  while (performance.now() - start < minSeconds * 1000 || calls < minCalls) await run(calls++);
  return (performance.now() - start) / calls;
}

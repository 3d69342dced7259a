#!/usr/bin/env node
/**
 * mlagents-envs: the built-in environments, plain executables launchable exactly like Unity builds.
 *
 *   npx mlagents-envs --list            one line per environment: NAME, a tab, its executable's absolute path
 *   npx mlagents-envs Basic --heuristic --steps 100 --record basic.demo
 */
import { spawn } from 'child_process';
import { builtinExecutable, builtinNames } from './builtin';

const USAGE = 'usage: mlagents-envs --list | mlagents-envs NAME [ARGS...]';

function main(argv: string[]): void {
  if (argv.length === 0 || argv[0] === '--help' || argv[0] === '-h') {
    process.stdout.write(`${USAGE}\nBuilt-in environments: ${builtinNames().join(', ')}\n`);
    process.exit(argv.length === 0 ? 2 : 0);
  }
  if (argv[0] === '--list') {
    for (const name of builtinNames()) process.stdout.write(`${name}\t${builtinExecutable(name)}\n`);
    return;
  }
  const child = spawn(builtinExecutable(argv[0]), argv.slice(1), { stdio: 'inherit' });
  const forward = (signal: NodeJS.Signals) => child.kill(signal);
  process.on('SIGINT', forward);
  process.on('SIGTERM', forward);
  child.on('exit', (code, signal) => process.exit(code ?? (signal ? 128 : 1)));
}

try {
  main(process.argv.slice(2));
} catch (error) {
  process.stderr.write(`mlagents-envs: ${(error as Error).message}\n${USAGE}\n`);
  process.exit(2);
}

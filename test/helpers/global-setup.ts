import { execFileSync } from 'child_process';
import * as path from 'path';

/** Tests run the built executables (environments are child processes), so build once first. */
export default function globalSetup(): void {
  const root = path.resolve(__dirname, '..', '..');
  execFileSync(process.execPath, [path.join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'], {
    cwd: root,
    stdio: 'inherit',
  });
  execFileSync(process.execPath, [path.join(root, 'scripts', 'mark-executables.js')], { cwd: root, stdio: 'inherit' });
}

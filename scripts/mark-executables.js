#!/usr/bin/env node
// tsc keeps a file's shebang but not an executable mode: give the mode to every built file that
// starts with "#!", so that dist/sims/* run as plain executables, as Unity builds do.
const fs = require('fs');
const path = require('path');

function walk(dir) {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) walk(file);
    else if (entry.name.endsWith('.js') && fs.readFileSync(file, 'utf8').startsWith('#!')) fs.chmodSync(file, 0o755);
  }
}

walk(path.join(__dirname, '..', 'dist'));

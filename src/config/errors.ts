/**
 * The one error of the configuration: it says where the setting came from (the YAML file, or
 * the command line), which key, and what is wrong, in the form `source: key.path: problem`.
 */
export class ConfigError extends Error {
  override name = 'ConfigError';

  constructor(
    /** The config file's absolute path, or `command line` (with the flag) for a flag's value. */
    readonly source: string,
    /** The key's full dotted path (`behaviors.3DBall.hyperparameters.batch_size`), if any. */
    readonly keyPath: string | null,
    readonly detail: string,
  ) {
    super(keyPath === null ? `${source}: ${detail}` : `${source}: ${keyPath}: ${detail}`);
  }
}

/** The word of `candidates` nearest to `word` by edit distance, when it is near enough to be a typo. */
export function closestMatch(word: string, candidates: readonly string[]): string | null {
  let best: string | null = null;
  let bestDistance = Infinity;
  for (const candidate of candidates) {
    const distance = editDistance(word.toLowerCase(), candidate.toLowerCase());
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  // Beyond about a third of the word, the nearest key is a guess, not a correction.
  return bestDistance <= Math.max(2, Math.floor(word.length / 3)) ? best : null;
}

/** ` Did you mean "x"?` when a candidate is close to `word`, else nothing. */
export function didYouMean(word: string, candidates: readonly string[]): string {
  const match = closestMatch(word, candidates);
  return match === null ? '' : ` Did you mean "${match}"?`;
}

/** Levenshtein distance with one rolling row. */
function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let diagonal = row[0];
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const above = row[j];
      row[j] = Math.min(above + 1, row[j - 1] + 1, diagonal + (a[i - 1] === b[j - 1] ? 0 : 1));
      diagonal = above;
    }
  }
  return row[b.length];
}

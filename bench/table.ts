/** The benchmarks' output: a title, then a header and rows in aligned columns. */
export function printTable(title: string, header: string[], rows: string[][]): void {
  const widths = header.map((h, c) => Math.max(h.length, ...rows.map((r) => r[c].length)));
  const line = (cells: string[]) => cells.map((cell, c) => cell.padEnd(widths[c])).join('  ').trimEnd();
  console.log(`\n${title}`);
  console.log(line(header));
  for (const row of rows) console.log(line(row));
}

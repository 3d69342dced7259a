/**
 * ML-Agents' own example configurations (../shared/reference/configs, ppo/ and sac/): every one
 * loads, validates, resolves, and reads back from its configuration.yaml unchanged.
 */
import * as fs from 'fs';
import * as path from 'path';
import { memoryLogger } from '../../src/common/logger';
import { loadRunOptions, toResolvedYaml } from '../../src/config';
import { REFERENCE_CONFIGS, writeConfig } from './config-helpers';

const files = fs.existsSync(REFERENCE_CONFIGS)
  ? ['ppo', 'sac'].flatMap((folder) =>
      fs
        .readdirSync(path.join(REFERENCE_CONFIGS, folder))
        .filter((name) => name.endsWith('.yaml'))
        .map((name) => `${folder}/${name}`),
    )
  : [];

if (files.length === 0) {
  describe("ML-Agents' reference configurations", () => {
    console.log(`skipped: ../shared/reference not present (looked for ${REFERENCE_CONFIGS})`);
    it.skip('skipped: ../shared/reference not present', () => undefined);
  });
} else {
  describe("ML-Agents' reference configurations", () => {
    it('include PPO and SAC configurations', () => {
      expect(files.filter((file) => file.startsWith('ppo/')).length).toBeGreaterThan(10);
      expect(files.filter((file) => file.startsWith('sac/')).length).toBeGreaterThan(5);
    });

    it.each(files)('%s loads, resolves and reads back the same', (file) => {
      const options = loadRunOptions([path.join(REFERENCE_CONFIGS, file)], '/', memoryLogger());
      const trainerType = file.startsWith('sac/') ? 'sac' : 'ppo';
      expect(Object.keys(options.behaviors).length).toBeGreaterThan(0);
      for (const settings of Object.values(options.behaviors)) expect(settings.trainer_type).toBe(trainerType);

      const resolved = toResolvedYaml(options);
      const again = loadRunOptions([writeConfig(resolved)], '/', memoryLogger());
      expect({ ...again, extras: options.extras }).toEqual(options);
      expect(toResolvedYaml(again)).toBe(resolved);
    });
  });
}

/**
 * Whether an engine's communication API version can talk to ours, by upstream's rule
 * (UnityEnvironment._check_communication_compatibility): major versions must match; before 1.0
 * the minor versions must match too; a different minor version after 1.0 works with a warning.
 */
export type Compatibility = 'same' | 'minor-differs' | 'incompatible';

export function parseVersion(version: string): [number, number, number] | null {
  const match = /^(\d+)\.(\d+)(?:\.(\d+))?$/.exec(version.trim());
  if (match === null) return null;
  return [Number(match[1]), Number(match[2]), Number(match[3] ?? 0)];
}

export function checkCommunicationCompatibility(unityVersion: string, ourVersion: string): Compatibility {
  const unity = parseVersion(unityVersion);
  const ours = parseVersion(ourVersion);
  if (unity === null || ours === null) return 'incompatible';
  if (unity[0] !== ours[0]) return 'incompatible';
  if (unity[1] !== ours[1]) return unity[0] === 0 ? 'incompatible' : 'minor-differs';
  return 'same';
}

/** The error text for an incompatible pair: both versions, and which side to upgrade. */
export function incompatibleVersionMessage(unityVersion: string, ourVersion: string): string {
  const unity = parseVersion(unityVersion);
  const ours = parseVersion(ourVersion);
  const upgrade =
    unity !== null && ours !== null && (unity[0] < ours[0] || (unity[0] === ours[0] && unity[1] < ours[1]))
      ? 'Upgrade the com.unity.ml-agents package of the Unity project (communication API 1.5.0 ships with release 18 and later, package 2.0.0 and later).'
      : 'Upgrade this trainer to a version that speaks the Unity package\'s communication API.';
  return (
    `The communication API version is not compatible between Unity and this trainer: ` +
    `trainer API ${ourVersion}, Unity API ${unityVersion || '(none given)'}. ${upgrade}`
  );
}

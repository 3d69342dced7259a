#!/bin/sh
# Runs a command with WebGPU on SwiftShader, the CPU Vulkan driver that Debian's chromium ships:
#   scripts/with-swiftshader.sh npx tsx bench/ppo-update.ts --backend webgpu-software
# Chromium's own Vulkan loader is used (the system may have none), and Vulkan needs a runtime dir.
set -e
dir=${CHROMIUM_DIR:-/usr/lib/chromium}
if [ ! -f "$dir/vk_swiftshader_icd.json" ]; then echo "no SwiftShader in $dir: run scripts/ensure-chromium.sh" >&2; exit 1; fi
export VK_ICD_FILENAMES="$dir/vk_swiftshader_icd.json"
export LD_LIBRARY_PATH="$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ -z "$XDG_RUNTIME_DIR" ]; then
  XDG_RUNTIME_DIR=$(mktemp -d)
  export XDG_RUNTIME_DIR
fi
exec "$@"

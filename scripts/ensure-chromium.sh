#!/bin/sh
# Makes sure Debian's chromium is installed: its SwiftShader (a CPU Vulkan driver) and Vulkan
# loader let CI run the WebGPU backend without a GPU (scripts/with-swiftshader.sh).
set -e
if [ -x /usr/bin/chromium ] && [ -f /usr/lib/chromium/vk_swiftshader_icd.json ]; then exit 0; fi
if [ "$(id -u)" != 0 ]; then echo "chromium is missing: install it with: sudo apt-get install chromium" >&2; exit 1; fi
apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium

/**
 * Headless Chromium for the browser tests, driven by puppeteer-core: Debian's chromium package
 * (scripts/ensure-chromium.sh installs it), or the binary CHROMIUM_PATH names. A failing test
 * leaves a screenshot of its page under test-artifacts/ (ignored by git).
 */
import * as fs from 'fs';
import * as path from 'path';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { ROOT } from './paths';

export const ARTIFACTS_DIR = path.join(ROOT, 'test-artifacts');

export function chromiumPath(): string {
  const browser = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
  if (!fs.existsSync(browser)) {
    throw new Error(`No Chromium at ${browser}: run scripts/ensure-chromium.sh (it installs Debian's chromium package), or set CHROMIUM_PATH.`);
  }
  return browser;
}

export function launchChromium(): Promise<Browser> {
  return puppeteer.launch({
    executablePath: chromiumPath(),
    headless: true,
    // Tests run as root in containers, where Chromium's sandbox cannot start.
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });
}

/** Runs `check` on `page`; if it fails, saves the page as test-artifacts/<name>.png and rethrows. */
export async function screenshotOnFailure(page: Page, name: string, check: () => Promise<void>): Promise<void> {
  try {
    await check();
  } catch (error) {
    fs.mkdirSync(ARTIFACTS_DIR, { recursive: true });
    const file = path.join(ARTIFACTS_DIR, `${name.replace(/[^\w.-]+/g, '_')}.png`);
    await page.screenshot({ path: file, fullPage: true }).catch(() => undefined);
    throw Object.assign(error as Error, { message: `${(error as Error).message}\n(screenshot: ${file})` });
  }
}

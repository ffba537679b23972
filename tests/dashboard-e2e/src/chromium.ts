import { type Browser, chromium } from 'playwright-core';

/** Debian's `chromium` package; playwright's own browser download is not used. */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** A headless Chromium. `--no-sandbox`: CI runs as root, where Chromium's sandbox refuses to start. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: ['--no-sandbox'] });
}

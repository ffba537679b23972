// Prints the one line CI reads, "N passed, N failed", from vitest's JSON report. A failure
// outside vitest (typecheck, lint, a crash before the report was written) counts as one failed
// check, so a red run can never print "0 failed".
import { existsSync, readFileSync } from 'node:fs';

const exitStatus = Number(process.argv[2] ?? 1);
const reportPath = new URL('../.test-results/vitest.json', import.meta.url);

let passed = 0;
let failed = 0;
if (existsSync(reportPath)) {
  const report = JSON.parse(readFileSync(reportPath, 'utf8'));
  passed = report.numPassedTests ?? 0;
  failed = report.numFailedTests ?? 0;
  // A test file that fails to load has no failed tests, only a failed suite.
  const brokenFiles = (report.testResults ?? []).filter(
    (file) =>
      file.status === 'failed' && (file.assertionResults ?? []).every((test) => test.status !== 'failed'),
  ).length;
  failed += brokenFiles;
}
if (exitStatus !== 0 && failed === 0) failed = 1;

console.log(`${passed} passed, ${failed} failed`);
process.exit(exitStatus === 0 && failed === 0 ? 0 : 1);

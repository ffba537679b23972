#!/usr/bin/env node
// `pnpm typecheck`: every workspace package's `typecheck` (its tsconfig.json, no emit), in as few
// TypeScript programs as there are distinct sets of compiler options.
//
// Why not one `tsc` per package (`turbo run typecheck`, which still works): in-repo packages
// resolve each other to their sources (the `@ricochet/source` condition), so each package's
// program checks every package it imports again. The broker's sources were checked nine times and
// the whole run took 3.5 minutes of a CI run on two cores; checked once each, it takes well under
// one. Packages whose options are the same (after `noEmit`) share one program, so every file is
// checked once per set of options it is seen under. A program's options are exactly its packages'
// options, so nothing is checked under looser settings than its own package's: `core` and
// `protocol`, which have no Node types, stay in a program without them, and the dashboard keeps
// its DOM lib and JSX.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** The workspace's package directories, as pnpm lists them (the root, which checks none, left out). */
function workspaceDirs() {
  const listed = JSON.parse(
    execFileSync('pnpm', ['ls', '--recursive', '--depth', '-1', '--json'], { cwd: root, encoding: 'utf8' }),
  );
  return listed.map((pkg) => pkg.path).filter((dir) => resolve(dir) !== root);
}

/** The tsconfig.json of every package whose `typecheck` script checks one, parsed. */
function typecheckedConfigs() {
  const configs = [];
  for (const dir of workspaceDirs()) {
    const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
    const script = manifest.scripts?.typecheck;
    if (script === undefined) continue;
    const project = /^tsc -p (\S+) --noEmit$/.exec(script)?.[1];
    if (project === undefined)
      throw new Error(`${manifest.name}: typecheck script "${script}" is not "tsc -p <config> --noEmit"`);
    const path = join(dir, project);
    const parsed = ts.getParsedCommandLineOfConfigFile(
      path,
      { noEmit: true },
      {
        ...ts.sys,
        onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
          throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'));
        },
      },
    );
    if (parsed === undefined) throw new Error(`${path}: not a tsconfig`);
    configs.push({ name: manifest.name, parsed });
  }
  return configs;
}

/** The options that decide how a file is checked: the parsed ones, less where they were read from. */
function optionsKey(options) {
  const { configFilePath: _path, ...rest } = options;
  return JSON.stringify(rest, Object.keys(rest).sort());
}

const started = performance.now();
const programs = new Map();
for (const { name, parsed } of typecheckedConfigs()) {
  const key = optionsKey(parsed.options);
  const program = programs.get(key) ?? {
    options: parsed.options,
    files: new Set(),
    packages: [],
    errors: [],
  };
  for (const file of parsed.fileNames) program.files.add(file);
  program.packages.push(name);
  program.errors.push(...parsed.errors);
  programs.set(key, program);
}

const host = {
  getCanonicalFileName: (fileName) => fileName,
  getCurrentDirectory: () => root,
  getNewLine: () => ts.sys.newLine,
};
let errors = 0;
for (const { options, files, packages, errors: configErrors } of programs.values()) {
  const program = ts.createProgram({
    rootNames: [...files],
    options,
    configFileParsingDiagnostics: configErrors,
  });
  // Its packages' config diagnostics included (the program was given them).
  const diagnostics = ts.getPreEmitDiagnostics(program);
  const found = diagnostics.filter(
    (diagnostic) => diagnostic.category === ts.DiagnosticCategory.Error,
  ).length;
  errors += found;
  if (diagnostics.length > 0) {
    const format = process.stdout.isTTY ? ts.formatDiagnosticsWithColorAndContext : ts.formatDiagnostics;
    process.stdout.write(format(diagnostics, host));
  }
  console.log(`typecheck: ${files.size} files of ${packages.join(', ')}: ${found} errors`);
}
console.log(`typecheck: ${programs.size} programs in ${((performance.now() - started) / 1000).toFixed(1)} s`);
process.exit(errors > 0 ? 1 : 0);

import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * Every service method that writes takes its transaction the same way: first
 * (docs/contributors/architecture.md, "Transactions"). A method's `trx: Knex.Transaction`, or a
 * `db: Knex | Knex.Transaction` without a default, is its first parameter; only a read may take
 * the connection it reads on last, with a default.
 */
const MODULES = path.resolve(__dirname, '../../src/modules');
const TRANSACTION_TYPES = new Set(['Knex.Transaction', 'Knex | Knex.Transaction', 'Knex.Transaction | Knex']);

function serviceFiles(directory: string): string[] {
  return fs.readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(directory, entry.name);
    if (entry.isDirectory()) return serviceFiles(full);
    return entry.name.endsWith('-service.ts') ? [full] : [];
  });
}

/** `file:line method(parameter)` for each transaction parameter a method takes anywhere but first. */
function misplacedTransactionParameters(file: string, text: string): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node) => {
    if (ts.isMethodDeclaration(node)) {
      node.parameters.forEach((parameter, index) => {
        const type = parameter.type?.getText(source).replace(/\s+/g, ' ');
        if (index === 0 || !type || !TRANSACTION_TYPES.has(type) || parameter.initializer) return;
        const { line } = source.getLineAndCharacterOfPosition(parameter.getStart(source));
        found.push(`${path.relative(MODULES, file)}:${line + 1} ${node.name.getText(source)}(${parameter.name.getText(source)})`);
      });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe('a service method takes its transaction first', () => {
  it('no method of a service takes a transaction anywhere but first (a read may take its connection last, with a default)', () => {
    const files = serviceFiles(MODULES);
    expect(files.length).toBeGreaterThan(20);
    expect(files.flatMap((file) => misplacedTransactionParameters(file, fs.readFileSync(file, 'utf8')))).toEqual([]);
  });

  it('the check finds a transaction taken last, and accepts one taken first or a read connection with a default', () => {
    const text = `class S {
      async create(caller: Caller, input: Input, trx: Knex.Transaction): Promise<void> {}
      async update(db: Knex | Knex.Transaction, id: string): Promise<void> {}
      async list(id: string, db: Knex | Knex.Transaction = this.knex): Promise<void> {}
      async move(id: string, db: Knex | Knex.Transaction): Promise<void> {}
    }`;
    expect(misplacedTransactionParameters(path.join(MODULES, 'x/x-service.ts'), text)).toEqual(['x/x-service.ts:2 create(trx)', 'x/x-service.ts:5 move(db)']);
  });
});

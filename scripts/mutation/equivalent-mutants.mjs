// Stryker ignore-plugin: skips the mutants listed under `equivalentMutants` in
// stryker.config.mjs and reports each as ignored with its reason. An entry names the
// enclosing function and the source text of the smallest node all of whose mutants are
// equivalent (compared without white space), so it survives a move of the file.
import { createRequire } from 'node:module';
import { PluginKind, commonTokens, declareFactoryPlugin } from '@stryker-mutator/api/plugin';

const require = createRequire(import.meta.resolve('@stryker-mutator/instrumenter'));
const generate = require('@babel/generator').default;

const squeeze = (text) => text.replace(/\s+/g, '');

function enclosingFunctionName(nodePath) {
  for (let current = nodePath.getFunctionParent(); current; current = current.parentPath?.getFunctionParent()) {
    const { node, parent } = current;
    if (node.id?.name) return node.id.name;
    if (node.key?.name) return node.key.name; // class or object method
    if (parent?.type === 'VariableDeclarator' && parent.id.name) return parent.id.name;
    if (parent?.type === 'ObjectProperty' && parent.key.name) return parent.key.name;
  }
  return undefined;
}

function equivalentMutantsIgnorer(options) {
  const listed = (options.equivalentMutants ?? []).map((entry) => ({ ...entry, squeezed: squeeze(entry.code) }));
  return {
    shouldIgnore(nodePath) {
      const candidates = listed.filter((entry) => entry.function === enclosingFunctionName(nodePath));
      if (candidates.length === 0) return undefined;
      const code = squeeze(generate(nodePath.node, { comments: false }).code);
      const match = candidates.find((entry) => entry.squeezed === code);
      return match ? `Equivalent: ${match.reason}` : undefined;
    },
  };
}
equivalentMutantsIgnorer.inject = [commonTokens.options];

export const strykerPlugins = [declareFactoryPlugin(PluginKind.Ignore, 'equivalent-mutants', equivalentMutantsIgnorer)];

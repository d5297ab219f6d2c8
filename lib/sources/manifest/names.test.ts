import { describe, expect, it } from 'vitest';
import {
  configKeyProblem,
  csiDriverNameProblem,
  descendingPathProblem,
  dns1123LabelProblem,
  dns1123SubdomainProblem,
  noBackstepsProblem,
  uidProblem,
  volumeItemPathProblem,
} from './names.ts';

type Rule = (value: string) => string | undefined;

const cases: { name: string; rule: Rule; value: string; problem: string | undefined }[] = [
  { name: 'a DNS label accepts lowercase alphanumerics and dashes', rule: dns1123LabelProblem, value: 'data-1', problem: undefined },
  { name: 'a DNS label rejects uppercase', rule: dns1123LabelProblem, value: 'Data', problem: 'must be a DNS-1123 label' },
  { name: 'a DNS label rejects dots', rule: dns1123LabelProblem, value: 'a.b', problem: 'must be a DNS-1123 label' },
  { name: 'a DNS label rejects a leading dash', rule: dns1123LabelProblem, value: '-a', problem: 'must be a DNS-1123 label' },
  { name: 'a DNS label rejects 64 characters', rule: dns1123LabelProblem, value: 'a'.repeat(64), problem: 'must be no more than 63 characters' },
  { name: 'a DNS label rejects a slash as a path escape', rule: dns1123LabelProblem, value: 'a/b', problem: "must not contain '/'" },
  { name: 'a DNS label rejects ..', rule: dns1123LabelProblem, value: '..', problem: "must not be '.' or '..'" },
  { name: 'a DNS label rejects NUL', rule: dns1123LabelProblem, value: 'a\0b', problem: 'must not contain NUL' },
  { name: 'a DNS label rejects the empty string', rule: dns1123LabelProblem, value: '', problem: 'must not be empty' },
  { name: 'a DNS subdomain accepts dotted names', rule: dns1123SubdomainProblem, value: 'pv.example-1.com', problem: undefined },
  { name: 'a DNS subdomain rejects consecutive dots', rule: dns1123SubdomainProblem, value: 'a..b', problem: 'must be a DNS-1123 subdomain' },
  { name: 'a DNS subdomain rejects ../x', rule: dns1123SubdomainProblem, value: '../x', problem: "must not contain '/'" },
  { name: 'a DNS subdomain rejects .', rule: dns1123SubdomainProblem, value: '.', problem: "must not be '.' or '..'" },
  { name: 'a DNS subdomain rejects 254 characters', rule: dns1123SubdomainProblem, value: 'a'.repeat(254), problem: 'must be no more than 253 characters' },
  { name: 'a CSI driver name allows uppercase', rule: csiDriverNameProblem, value: 'Hostpath.CSI.k8s.io', problem: undefined },
  { name: 'a CSI driver name rejects a slash', rule: csiDriverNameProblem, value: 'csi/x', problem: "must not contain '/'" },
  { name: 'a CSI driver name rejects 64 characters', rule: csiDriverNameProblem, value: 'a'.repeat(64), problem: 'must be no more than 63 characters' },
  { name: 'a uid accepts a UUID', rule: uidProblem, value: '0b6a3c2e-9f7d-4c1a-8e2b-1d3f5a7c9e0b', problem: undefined },
  { name: 'a uid accepts 32 hex digits (kubelet static pods)', rule: uidProblem, value: 'd41d8cd98f00b204e9800998ecf8427e', problem: undefined },
  { name: 'a uid rejects a dot', rule: uidProblem, value: 'a.b', problem: "must consist of ASCII letters, digits and '-', starting with a letter or digit" },
  { name: 'a uid rejects a leading dash', rule: uidProblem, value: '-rf', problem: "must consist of ASCII letters, digits and '-', starting with a letter or digit" },
  { name: 'a uid rejects ../etc', rule: uidProblem, value: '../etc', problem: "must not contain '/'" },
  { name: 'a uid rejects 65 characters', rule: uidProblem, value: 'a'.repeat(65), problem: 'must be no more than 64 characters' },
  { name: 'a config key accepts dots and underscores', rule: configKeyProblem, value: 'app_config.yaml', problem: undefined },
  { name: 'a config key rejects ..data', rule: configKeyProblem, value: '..data', problem: "must not start with '..'" },
  { name: 'a config key rejects a slash', rule: configKeyProblem, value: 'a/b', problem: "must not contain '/'" },
  { name: 'a config key rejects a space', rule: configKeyProblem, value: 'a b', problem: "must consist of alphanumerics, '-', '_' or '.'" },
  { name: 'a descending path accepts nested relative paths', rule: descendingPathProblem, value: 'a/b/c', problem: undefined },
  { name: 'a descending path rejects an absolute path', rule: descendingPathProblem, value: '/etc', problem: 'must be a relative path' },
  { name: 'a descending path rejects a .. segment', rule: descendingPathProblem, value: 'a/../../etc', problem: "must not contain '..'" },
  { name: 'a descending path allows .. inside a segment name', rule: descendingPathProblem, value: 'a..b', problem: undefined },
  { name: 'a volume item path rejects the empty string', rule: volumeItemPathProblem, value: '', problem: 'must not be empty' },
  { name: 'a volume item path rejects the reserved ..data prefix', rule: volumeItemPathProblem, value: '..data/x', problem: "must not start with '..'" },
  { name: 'a host path rejects a .. segment', rule: noBackstepsProblem, value: '/var/../etc', problem: "must not contain '..'" },
  { name: 'a host path accepts an absolute path', rule: noBackstepsProblem, value: '/var/lib/data', problem: undefined },
];

describe('name and path rules', () => {
  it.each(cases)('$name', ({ rule, value, problem }) => {
    expect(rule(value)).toBe(problem);
  });
});

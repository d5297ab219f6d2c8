// The cluster's certificates and keys, made with the openssl command line (Node has no X.509
// writer): a CA, the API server's serving certificate for 127.0.0.1/localhost/kubernetes, the
// service-account signing key pair, and one client certificate per identity. A client's identity
// is its certificate: CN = user name, O = groups, exactly as the API server's x509 authenticator
// reads them. Files that exist are kept (a restart reuses the same identities).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** An identity that gets a client certificate and a kubeconfig. */
export interface ClientIdentity {
  /** File stem: `<pki>/<file>.crt`, `<state>/<file>.kubeconfig`. */
  readonly file: string;
  /** User name (certificate CN). */
  readonly user: string;
  /** Groups (certificate O, one per group). */
  readonly groups: readonly string[];
}

export class OpensslError extends Error {
  override readonly name = 'OpensslError';
}
export const isOpensslError = (e: unknown): e is OpensslError => e instanceof OpensslError;

function openssl(args: readonly string[], what: string): void {
  const r = spawnSync('openssl', args, { encoding: 'utf8' });
  if (r.error !== undefined) throw new OpensslError(`${what}: cannot run openssl (${r.error.message}); it makes the cluster's certificates`);
  if (r.status !== 0) throw new OpensslError(`${what}: openssl ${args[0] ?? ''} exited ${String(r.status)}: ${r.stderr.trim()}`);
}

/** `/O=a/O=b/CN=user`, escaping what openssl's -subj syntax treats specially. */
function subject(user: string, groups: readonly string[]): string {
  const esc = (v: string): string => v.replace(/[\\/+,=]/g, (c) => `\\${c}`);
  return `${groups.map((g) => `/O=${esc(g)}`).join('')}/CN=${esc(user)}`;
}

const DAYS = '3650';

export interface Pki {
  readonly dir: string;
  readonly caCert: string;
  readonly caKey: string;
  readonly serverCert: string;
  readonly serverKey: string;
  readonly serviceAccountKey: string;
  readonly serviceAccountPub: string;
  clientCert(id: ClientIdentity): string;
  clientKey(id: ClientIdentity): string;
}

/** Makes (or keeps) every file of the cluster's PKI in `dir`. */
export function ensurePki(dir: string, clients: readonly ClientIdentity[]): Pki {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const f = (name: string): string => join(dir, name);
  const pki: Pki = {
    dir,
    caCert: f('ca.crt'),
    caKey: f('ca.key'),
    serverCert: f('apiserver.crt'),
    serverKey: f('apiserver.key'),
    serviceAccountKey: f('sa.key'),
    serviceAccountPub: f('sa.pub'),
    clientCert: (id) => f(`${id.file}.crt`),
    clientKey: (id) => f(`${id.file}.key`),
  };
  if (!existsSync(pki.caCert)) {
    openssl(['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', pki.caKey, '-out', pki.caCert, '-days', DAYS, '-subj', '/CN=volumescope-cluster-ca', '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign'], 'the cluster CA');
  }
  const signed = (name: string, subj: string, ext: string): void => {
    const crt = f(`${name}.crt`);
    if (existsSync(crt)) return;
    const key = f(`${name}.key`);
    const csr = f(`${name}.csr`);
    const extFile = f(`${name}.ext`);
    openssl(['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', csr, '-subj', subj], `the key of ${name}`);
    writeFileSync(extFile, ext);
    try {
      openssl(['x509', '-req', '-in', csr, '-CA', pki.caCert, '-CAkey', pki.caKey, '-CAcreateserial', '-out', crt, '-days', DAYS, '-extfile', extFile], `the certificate of ${name}`);
    } finally {
      rmSync(csr, { force: true });
      rmSync(extFile, { force: true });
    }
  };
  signed(
    'apiserver',
    '/CN=kube-apiserver',
    'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n' +
      'subjectAltName=IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local\n',
  );
  for (const id of clients) {
    signed(id.file, subject(id.user, id.groups), 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n');
  }
  if (!existsSync(pki.serviceAccountPub)) {
    openssl(['genpkey', '-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048', '-out', pki.serviceAccountKey], 'the service-account signing key');
    openssl(['pkey', '-in', pki.serviceAccountKey, '-pubout', '-out', pki.serviceAccountPub], 'the service-account public key');
  }
  return pki;
}

/** A kubeconfig for `id` against `server`, with the CA and the client certificate inlined. */
export function kubeconfig(pki: Pki, server: string, id: ClientIdentity): string {
  const b64 = (file: string): string => readFileSync(file).toString('base64');
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '- name: volumescope',
    '  cluster:',
    `    server: ${server}`,
    `    certificate-authority-data: ${b64(pki.caCert)}`,
    'users:',
    `- name: ${id.file}`,
    '  user:',
    `    client-certificate-data: ${b64(pki.clientCert(id))}`,
    `    client-key-data: ${b64(pki.clientKey(id))}`,
    'contexts:',
    `- name: ${id.file}@volumescope`,
    '  context:',
    '    cluster: volumescope',
    `    user: ${id.file}`,
    `current-context: ${id.file}@volumescope`,
    '',
  ].join('\n');
}

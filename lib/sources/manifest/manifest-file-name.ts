/** Which directory entries are manifest files. */

const manifestExtensions = ['.yaml', '.yml', '.json'] as const;

/**
 * True for a plain entry name that ends in `.yaml`, `.yml` or `.json` (lowercase, as written)
 * and is not hidden or an editor/tool artefact:
 * - dotfiles: hidden files, emacs locks (`.#x.yaml`), vim swap files, `.goutputstream-*`, and the
 *   `..data` / `..<timestamp>` entries of a Kubernetes ConfigMap/Secret volume;
 * - names starting with `~` or `#` (office locks, emacs autosaves).
 * Backup and temp names (`x.yaml~`, `x.yaml.swp`, `x.yaml.tmp`, `x.json___jb_tmp___`) already
 * fail the extension test. The name must be a single path component.
 */
export function isManifestFileName(name: string): boolean {
  if (name === '' || name.includes('/') || name.includes('\0')) return false;
  if (name.startsWith('.') || name.startsWith('~') || name.startsWith('#')) return false;
  return manifestExtensions.some((ext) => name.endsWith(ext) && name.length > ext.length);
}

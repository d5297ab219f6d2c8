/**
 * A problem the API source currently has, in the shape the manifest source and the snapshot use
 * (`{file, message}`). `file` names what failed as an API path: the collection an informer
 * watches (`/api/v1/pods?fieldSelector=spec.nodeName=node-a`) or one object
 * (`/api/v1/namespaces/prod/persistentvolumeclaims/data`). `message` is self-contained.
 */
export interface KubeSourceError {
  file: string;
  message: string;
}

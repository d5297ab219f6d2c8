/**
 * Typed request bodies of @kubernetes/client-node are model classes (its serializer reads their
 * attribute maps); a plain object literal of the same shape is not an instance. `model` builds
 * the instance from fields.
 */
export function model<T extends object>(Model: new () => T, fields: Partial<T>): T {
  return Object.assign(new Model(), fields);
}

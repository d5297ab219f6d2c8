import { connection } from 'next/server';
import { AttachmentsList } from '../../../../components/attachments/attachments-list.tsx';

export const metadata = { title: 'Attachments · VolumeScope' };

export default async function AttachmentsPage() {
  // The data comes from the server's informers at request time, never from the build.
  await connection();
  return (
    <>
      <h1>Blocked and suspect attachments</h1>
      <p className="muted">What the attach/detach controller believes, rebuilt from VolumeAttachments, volumes, pods and nodes.</p>
      <AttachmentsList />
    </>
  );
}

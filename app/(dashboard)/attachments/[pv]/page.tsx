import { connection } from 'next/server';
import { AttachmentDetail } from '../../../../components/attachments/attachment-detail.tsx';
import { decodeSegment } from '../../../../lib/dashboard/routes.ts';

export default async function AttachmentPage({ params }: { params: Promise<{ pv: string }> }) {
  await connection();
  const pv = decodeSegment((await params).pv);
  return (
    <>
      <h1>
        Attachments of <code>{pv}</code>
      </h1>
      <AttachmentDetail pv={pv} />
    </>
  );
}

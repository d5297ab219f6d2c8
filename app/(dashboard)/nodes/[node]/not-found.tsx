import { NotFoundMessage } from '../../../../components/page/not-found-message.tsx';

export default function ItemNotFound() {
  return <NotFoundMessage level="item" />;
}

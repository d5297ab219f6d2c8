import { NotFoundMessage } from '../../../../components/not-found-message.tsx';

export default function ItemNotFound() {
  return <NotFoundMessage level="item" />;
}

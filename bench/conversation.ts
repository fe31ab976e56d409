/** A benign conversation of about a given size, for the policy benchmarks (detectors, engine). */

const SENTENCES = [
  'Please summarise the attached quarterly report for the finance team and highlight any risks.',
  'The customer asked whether the refund for order 88123 was processed last Tuesday.',
  'Our deployment pipeline failed at the integration test stage; the logs mention a timeout.',
  'Draft a short reply thanking them and confirming the meeting on the 14th at 10:30.',
  'Compare the three supplier offers by price, delivery time and warranty terms.',
  'The user wants to know how to export their data as CSV from the dashboard.',
];

/** Alternating user and assistant messages of about `bytes` in all; the fourth carries an email address. */
export function conversation(bytes: number): Array<{ role: string; content: string }> {
  const out: Array<{ role: string; content: string }> = [];
  for (let i = 0, size = 0; size < bytes; i++) {
    const content = SENTENCES[i % SENTENCES.length] + (i === 3 ? ' Contact: jane.doe@example.com.' : '');
    out.push({ role: i % 2 ? 'assistant' : 'user', content });
    size += content.length + 30;
  }
  return out;
}

/*
 * merge: one reply from the replies of a parent's parts (request.h).
 * Parts' replies are whole RESP replies in part->reply; the merged reply goes
 * into the parent's reply buffer. An error from any part is the answer.
 */
#ifndef TAGPROXY_MERGE_H
#define TAGPROXY_MERGE_H

struct request;

void merge_replies(struct request *parent);

#endif

#pragma once
// The order of the stages over many batches, and the threads: archive and purge overlap the source side (the
// deletes of up to two copied batches, in batch order, and the read of the next one) with the destination side
// of the batch after them; copy-only runs batch by batch. It decides nothing about rows: the stages do.
#include <string>
#include <vector>

#include "pipeline/context.h"
#include "pipeline/source_reader.h"
#include "pipeline/stages.h"

namespace goarchive::pipeline {

class Loop {
public:
  Loop(Context& ctx, const SourceReader& reader, Stages& stages) : m_ctx(ctx), m_reader(reader), m_stages(stages) {}

  // Archives batch after batch until no root is left (true) or a hook says stop (false).
  bool run(unsigned& batch_no);

private:
  bool pipelined(unsigned& batch_no);
  bool batch_by_batch(unsigned& batch_no);

  Context& m_ctx;
  const SourceReader& m_reader;
  Stages& m_stages;
};

}  // namespace goarchive::pipeline
